"""benchmarks/bench_against.py: a revision's trainer benchmark beside this tree's, in alternating rounds."""

from __future__ import annotations

import json
import subprocess

import pytest

from benchmarks import bench_against


def test_summary_compares_medians_per_preset() -> None:
    runs = {
        "revision": [
            {"preset": "tiny", "trainer_tokens_per_s": v, "eval_samples_per_s": 1.0} for v in (100, 300, 200)
        ]
        + [{"preset": "nano", "trainer_tokens_per_s": 50}],
        "this": [{"preset": "tiny", "trainer_tokens_per_s": v} for v in (500, 400, 450)],
    }
    rows = bench_against.side_by_side(runs)
    assert rows[0] == {
        "preset": "tiny",
        "trainer_tokens_per_s": {"revision": 200, "this": 450, "ratio": 2.25},
    }
    assert rows[1] == {"preset": "nano"}  # measured on one side only: nothing to compare


def test_time_to_accuracy_is_compared_seed_by_seed() -> None:
    tta = lambda seed, s, steps: {"seed": seed, "train_seconds_to_target": s, "steps": steps}  # noqa: E731
    runs = {
        "revision": [tta(0, 20.0, 500), tta(1, 30.0, 400), tta(0, 22.0, 500)],
        "this": [tta(0, 10.0, 500), tta(1, None, 900), tta(0, 12.0, 500)],  # seed 1 never reached it
    }
    seed0, seed1 = bench_against.side_by_side(runs)
    assert seed0["seed"] == 0 and seed0["train_seconds_to_target"] == {
        "revision": 21.0,
        "this": 11.0,
        "ratio": 0.524,
    }
    assert seed1 == {"seed": 1, "steps": {"revision": 400, "this": 900, "ratio": 2.25}}


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def test_the_revision_is_checked_out_beside_and_removed(tmp_path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "f.txt").write_text("old")
    _git(repo, "add", "f.txt")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old")
    (repo / "f.txt").write_text("new, not committed")
    with bench_against.checked_out("HEAD", repo) as tree:
        assert (tree / "f.txt").read_text() == "old"
    assert not tree.exists()
    assert _git(repo, "worktree", "list").count("\n") == 1  # the worktree is unregistered too
    with pytest.raises(SystemExit, match="no-such-rev"), bench_against.checked_out("no-such-rev", repo):
        pass


@pytest.mark.slow
def test_both_sides_run_the_benchmark_and_are_summarised(capsys) -> None:
    args = "throughput --presets nano --batch-size 16 --steps 3 --warmup 1 --set train.num_threads=1"
    bench_against.main(["HEAD", "--rounds", "1", "--", *args.split(), "--set", "data.train_samples=200"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r.get("side"), r.get("round")) for r in lines[:2]] == [("revision", 1), ("this", 1)]
    assert all(r["trainer_tokens_per_s"] > 0 for r in lines[:2])
    (summary,) = lines[2:]
    assert summary["summary"] == "HEAD" and summary["preset"] == "nano"
    ratio = summary["trainer_tokens_per_s"]
    assert ratio["ratio"] == round(ratio["this"] / ratio["revision"], 3)


def test_the_benchmark_arguments_are_required() -> None:
    with pytest.raises(SystemExit):
        bench_against.main(["HEAD"])
