"""The trainer benchmark of this tree beside the same benchmark of a git revision, in alternating rounds.

    python benchmarks/bench_against.py bbbbb37 --rounds 3 -- throughput --presets tiny gpt2-mini \\
        --batch-size 128 --set train.num_threads=1 --set train.precision=bf16

A speed-up is only as good as its baseline, and the processor (and how busy its other core is) changes
between sessions and drifts within one. So the revision is checked out in a temporary git worktree and
both sides run `benchmarks/bench_train.py` with the arguments after `--`, one after the other, round after
round, on the same machine. Every run's JSON line is printed with its side and round, then one summary line
per preset (per seed for `tta`): the median of each measure on either side and their ratio (this tree /
the revision).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the measures a summary compares (those a record has): higher is better for all but times and steps
MEASURES = (
    "trainer_tokens_per_s",
    "bare_tokens_per_s",
    "trainer_vs_bare",
    "tokens_per_s",
    "ms_per_step",
    "ms_per_step_unprofiled",
    "train_seconds_to_target",
    "steps",
)


@contextmanager
def checked_out(revision: str, repo: Path = ROOT) -> Iterator[Path]:
    """`revision` in a detached worktree of `repo`, removed afterwards."""
    commit = git(repo, "rev-parse", "--verify", f"{revision}^{{commit}}")
    with tempfile.TemporaryDirectory(prefix="bench-against-") as folder:
        tree = Path(folder) / commit[:12]
        git(repo, "worktree", "add", "--detach", str(tree), commit)
        try:
            yield tree
        finally:
            git(repo, "worktree", "remove", "--force", str(tree))


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def bench(tree: Path, args: list[str]) -> list[dict]:
    """`benchmarks/bench_train.py ARGS` run from `tree`, importing that tree's packages (PYTHONPATH comes
    before the editable install's path); its JSON lines."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = tree / "benchmarks" / "bench_train.py"
    done = subprocess.run(
        [sys.executable, str(script), *args], cwd=tree, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def subject(record: dict) -> tuple[str, object]:
    """What a record measures: its preset (throughput, profile) or its seed (time to accuracy)."""
    return ("preset", record["preset"]) if "preset" in record else ("seed", record.get("seed"))


def side_by_side(runs: dict[str, list[dict]]) -> list[dict]:
    """Per preset (or seed), the median of every measure on each side and `ratio` = this tree / the
    revision."""
    grouped: dict[tuple[str, object], dict[str, list[dict]]] = {}
    for side, records in runs.items():
        for r in records:
            grouped.setdefault(subject(r), {s: [] for s in runs})[side].append(r)
    rows = []
    for key, by_side in grouped.items():
        row: dict = dict([key])
        for measure in MEASURES:
            values = {
                side: [r[measure] for r in records if r.get(measure) is not None]
                for side, records in by_side.items()
            }
            if all(values.values()):
                medians = {side: round(statistics.median(v), 4) for side, v in values.items()}
                row[measure] = {**medians, "ratio": round(medians["this"] / medians["revision"], 3)}
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    ours, bench_args = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="a commit, tag or branch of this repository")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side, alternating")
    args = parser.parse_args(ours)
    if not bench_args:
        parser.error("give bench_train.py's arguments after --, e.g. -- throughput --presets tiny")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    runs: dict[str, list[dict]] = {"revision": [], "this": []}
    with checked_out(args.revision) as tree:
        for round_ in range(1, args.rounds + 1):
            for side, folder in (("revision", tree), ("this", ROOT)):
                for record in bench(folder, bench_args):
                    runs[side].append(record)
                    print(json.dumps({"side": side, "round": round_, **record}), flush=True)
    for row in side_by_side(runs):
        print(json.dumps({"summary": args.revision, "rounds": args.rounds, **row}), flush=True)


if __name__ == "__main__":
    main()
