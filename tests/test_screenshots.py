"""The screenshot script's pure parts: the pages it shoots and the port its MLflow server gets. Taking the
pictures needs Chromium and is no part of the test suite (`make screenshots`)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from analysis.screenshots import free_port, report_shots, starting_at, ui_shots


def test_a_free_port_can_be_listened_on() -> None:
    port = free_port()
    assert port != 5000
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))


def test_the_report_is_shot_at_its_top_and_from_its_wrong_answers_on(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make demo"):
        report_shots(tmp_path, tmp_path)
    page = '<style>p {}</style><main><h2>table</h2><h4 id="wrong-answers">wrong</h4><p>1+1</p></main>'
    (tmp_path / "report.html").write_text(page)
    work = tmp_path / "work"
    work.mkdir()
    top, errors = report_shots(tmp_path, work)
    assert (top.name, errors.name) == ("report_html.png", "report_errors.png")
    assert top.url == (tmp_path / "report.html").as_uri() and errors.url.startswith("file://")
    cut = (work / "report_errors.html").read_text()
    assert cut == page.replace("</style>", "main > *:has(~ #wrong-answers) { display: none; }\n</style>")
    with pytest.raises(ValueError, match="no #wrong-answers: its trials kept no wrong answers"):
        starting_at("<style></style><main></main>", "wrong-answers")
    # a report without the section (every answer right, or trials from before the file): its top alone
    (tmp_path / "report.html").write_text("<style></style><main><h2>table</h2></main>")
    assert [shot.name for shot in report_shots(tmp_path, work)] == ["report_html.png"]


def test_the_ui_is_shot_on_the_views_charts_its_runs_and_its_logged_models() -> None:
    view = "http://127.0.0.1:5123/#/experiments/7/runs?viewStateShareKey=sweep-abc"
    shots = {s.name: s.url for s in ui_shots(view)}
    assert shots == {
        "mlflow_ui.png": view + "&compareRunsMode=CHART",
        "mlflow_runs.png": view,
        "mlflow_models.png": "http://127.0.0.1:5123/#/experiments/7/models?workflowType=machine_learning",
    }
    with pytest.raises(ValueError):
        ui_shots("http://127.0.0.1:5123/#/experiments/7/traces")
