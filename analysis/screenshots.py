"""README's pictures of a sweep, taken again: the HTML report and the MLflow UI in headless Chromium.

A picture in README is only as true as the run it was taken of; this retakes them from a store and a report
folder (`make demo`'s: sqlite:///mlflow.db, reports/demo) so a change to the report or the view shows up in
README by one command (`make screenshots`). It starts its own `mlflow server` on a free port (never 5000,
where a person's UI may run), stores the sweep's view there (`analysis.ui_view.share_view`, the link
`make demo` prints), shoots each page and stops the server. Chromium renders the page with a virtual-time
budget: the MLflow UI is a single-page app that draws after its requests return, and a fixed budget lets it
finish without a script driving the browser.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from analysis.load import read_sweep
from analysis.ui_view import TRAINING_WORKFLOW, share_view

#: the browser window of every picture
WINDOW = (1900, 1250)
#: the wrong-answers section: the width of the report's column, the height of the demo's two points
ERRORS_WINDOW = (1400, 900)
#: how long (virtual ms) a page may take to draw: a 20-trial sweep's charts still spun after 15 s
BUDGET_MS = 30000
#: README's pictures above this size are stored as 256-colour PNGs (screenshots are flat colour)
MAX_BYTES = 400_000
#: the anchor of the report's first wrong-answers section (`analysis.html.wrong_answers_section`)
WRONG_ANSWERS = "wrong-answers"
#: the picture of the report's first wrong-answers section
ERRORS_SHOT = "report_errors.png"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
#: the name the browser reaches the server by (mapped to 127.0.0.1 in the browser alone): MLflow 3.17's UI
#: opens its Assistant panel over a third of the page on a first visit to localhost / 127.0.0.1, a panel a
#: picture of the view is better without
UI_HOST = "mlflow-ui"


@dataclass(frozen=True)
class Shot:
    """One picture: its file name under the pictures' folder and the page it shows."""

    name: str
    url: str
    window: tuple[int, int] = WINDOW


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the OS's pick; a race with another process is unlikely)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def has_anchor(page: str, anchor: str) -> bool:
    return f'id="{anchor}"' in page


def starting_at(page: str, anchor: str) -> str:
    """The report's page drawn from its element `anchor` on: every element of <main> before it hidden. (A
    link to report.html#anchor is what a reader follows, but headless Chromium's screenshot of it comes out
    blank.)"""
    if not has_anchor(page, anchor):
        raise ValueError(
            f"the report has no #{anchor}: its trials kept no wrong answers (from before eval/errors.csv, "
            "or run with train.errors_per_cell=0), or it was written before the section existed"
        )
    return page.replace("</style>", f"main > *:has(~ #{anchor}) {{ display: none; }}\n</style>", 1)


def report_shots(report: Path, workdir: Path) -> list[Shot]:
    """The report's top (verdict, table, heatmap) and its first wrong-answers section (a copy of the page
    that starts there, written to `workdir`)."""
    page = report.resolve() / "report.html"
    if not page.is_file():
        raise FileNotFoundError(f"{page}: no report there (make demo writes reports/demo/report.html)")
    top = Shot("report_html.png", page.as_uri())
    text = page.read_text()
    if not has_anchor(text, WRONG_ANSWERS):  # nothing to shoot: its trials kept no wrong answers
        print(f"{page} has no wrong answers section: {ERRORS_SHOT} not taken", file=sys.stderr)
        return [top]
    errors = workdir / "report_errors.html"  # the page's images are inline: the copy shows them all
    errors.write_text(starting_at(text, WRONG_ANSWERS))
    return [top, Shot(ERRORS_SHOT, errors.as_uri(), ERRORS_WINDOW)]


def ui_shots(view_url: str) -> list[Shot]:
    """The MLflow UI: the view's charts (the link `make demo` prints), its runs table in the experiment's
    training view, and the experiment's Logged models tab."""
    runs_page = view_url.split("?", 1)[0]
    if not runs_page.endswith("/runs"):
        raise ValueError(f"{view_url}: not the runs page of an experiment")
    return [
        Shot("mlflow_ui.png", f"{view_url}&compareRunsMode=CHART"),
        Shot("mlflow_runs.png", view_url, (WINDOW[0], 760)),  # the demo's 6 trials and 2 groups
        Shot(
            "mlflow_models.png",
            f"{runs_page.removesuffix('/runs')}/models?{TRAINING_WORKFLOW}",
            (WINDOW[0], 560),
        ),
    ]


def browser() -> str:
    """The Chromium on PATH (`make screenshots` installs it with apt-get)."""
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        raise FileNotFoundError("no chromium on PATH: apt-get install chromium (make screenshots does)")
    return found


def _wait_until_up(url: str, server: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"mlflow server exited with {server.returncode} before it answered")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise TimeoutError(f"mlflow server at {url} did not answer in {timeout_s:.0f} s")


@contextmanager
def mlflow_server(tracking_uri: str, port: int, timeout_s: float = 120.0) -> Iterator[str]:
    """`mlflow server` over the store on 127.0.0.1:`port` while the block runs; yields its address as the
    browser reaches it (`UI_HOST`)."""
    mlflow = Path(sys.executable).with_name("mlflow")
    command = [str(mlflow), "server", "--backend-store-uri", tracking_uri, "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1"]
    command += ["--allowed-hosts", f"{UI_HOST}:{port},127.0.0.1:{port},localhost:{port}"]
    command += ["--cors-allowed-origins", f"http://{UI_HOST}:{port}"]  # the UI's own POST requests
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_up(url, server, timeout_s)
            yield f"http://{UI_HOST}:{port}"
        except BaseException:
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-3000:])
            raise
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def chromium_command(chromium: str, profile: str, budget_ms: int, window: tuple[int, int]) -> list[str]:
    """Headless Chromium as root in a container can run it: no sandbox, no GPU, nothing fetched from the
    network but the page, a fresh profile; `UI_HOST` mapped to 127.0.0.1."""
    return [
        chromium,
        *("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"),
        *("--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"),
        "--hide-scrollbars",
        f"--host-resolver-rules=MAP {UI_HOST} 127.0.0.1",
        f"--user-data-dir={profile}",
        f"--virtual-time-budget={budget_ms}",
        f"--window-size={window[0]},{window[1]}",
    ]


def dump_dom(chromium: str, url: str, budget_ms: int = BUDGET_MS, window: tuple[int, int] = WINDOW) -> str:
    """The page's DOM once it has drawn (`--dump-dom`): what a test reads of a single-page app."""
    with tempfile.TemporaryDirectory() as profile:
        command = [*chromium_command(chromium, profile, budget_ms, window), "--dump-dom", url]
        return subprocess.run(command, check=True, capture_output=True, text=True, timeout=180).stdout


def shoot(chromium: str, shot: Shot, out: Path, budget_ms: int = BUDGET_MS) -> Path:
    """One headless-Chromium screenshot of `shot` into out/<name>, made small when it is large."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / shot.name
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile: no colour a person picked
        command = [
            *chromium_command(chromium, profile, budget_ms, shot.window),
            f"--screenshot={path}",
            shot.url,
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=180)
    if path.stat().st_size > MAX_BYTES:
        Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)
    return path


def take(
    grid: str,
    tracking_uri: str,
    report: Path,
    out: Path,
    port: int | None = None,
    runs: list[str] | None = None,
) -> list[Path]:
    """Every picture of the grid's sweep in the store (its latest, or the parent `runs` read as one) and
    of its report folder, written to `out`."""
    chromium = browser()
    with tempfile.TemporaryDirectory() as workdir:
        shots = report_shots(report, Path(workdir))
        if not any(shot.name == ERRORS_SHOT for shot in shots):  # an older run's picture must not stay
            (out / ERRORS_SHOT).unlink(missing_ok=True)
        with mlflow_server(tracking_uri, port or free_port()) as url:
            view = share_view(read_sweep(grid, tracking_uri, runs), url)
            return [shoot(chromium, shot, out) for shot in [*shots, *ui_shots(view)]]
