"""scripts/reproduce_cpu.py: the plan's parts, and how each part finds its sweep in a real MLflow store."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import reproduce_cpu  # noqa: E402
from reproduce_cpu import PLAN, TAG_COMMAND, Planned, part_runs, sweep_args_of  # noqa: E402

from arith.config import parse_set  # noqa: E402
from sweeps.grids import points  # noqa: E402
from sweeps.run import parse_args, select  # noqa: E402


def shown(plan: Planned, uri: str = "sqlite:////a dir/mlflow.db", storage: str = "/a dir/ray") -> str:
    return "python " + shlex.join(plan.command(uri, storage))


@pytest.mark.parametrize("plan", PLAN, ids=lambda p: " ".join(p.sweep_args()[1:]))
def test_every_part_is_a_valid_sweep_that_selects_points(plan: Planned) -> None:
    args = parse_args(plan.command("sqlite:///x.db", "/tmp/ray")[1:])
    assert args.grid == plan.grid and args.scale == "cpu"
    selected = select(points(plan.grid, "cpu", args.seeds), parse_set(args.only))
    assert {c.train.seed for c in selected} == set(plan.seed_values)
    # the part is found again from the command it is tagged with, wherever its store was
    assert sweep_args_of(shown(plan)) == plan.sweep_args()


def test_parts_of_a_grid_are_distinct() -> None:
    keys = [tuple(plan.sweep_args()) for plan in PLAN]
    assert len(set(keys)) == len(keys)
    assert reproduce_cpu.grids()[:2] == ["cpu_tune_reverse", "cpu_tune_mul"]


def test_each_part_finds_its_latest_tagged_sweep(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("mul_format", artifact_location=(tmp_path / "art").as_uri())
    first, later = [plan for plan in PLAN if plan.grid == "mul_format"]

    def sweep(plan: Planned | None) -> str:
        tags = {"sweep": "1", "grid": "mul_format", "scale": "cpu"}
        if plan is not None:
            tags[TAG_COMMAND] = shown(plan, str(tmp_path))
        run = client.create_run(experiment, tags=tags)
        time.sleep(0.01)  # distinct start times
        return run.info.run_id

    old, new = sweep(first), sweep(first)
    sweep(None)  # a sweep run by hand (no command tag) is not part of the plan
    found = {
        plan.archive_name: run.info.run_id if run else None for plan, run in part_runs(client, "mul_format")
    }
    assert found == {first.archive_name: new, later.archive_name: None} and old != new
    extra = sweep(later)
    found = {plan.archive_name: run.info.run_id for plan, run in part_runs(client, "mul_format")}
    assert found == {first.archive_name: new, later.archive_name: extra}


EARLIER = """# Results

## Findings at a glance

## mul_format

- command: `python sweeps/run.py --grid mul_format --scale cpu --seeds 3 --tracking-uri \
sqlite:////work/main/runs/cpu/mlflow.db --storage-path /work/main/runs/cpu/ray_results`

### Findings

| claim | status | evidence |
|---|---|---|
| padding beats basic [tb:basic-5] | **held** | max_digits=3: 0.12 vs 0.03 |

## add_length

**Not yet run** at cpu scale (no time).
"""


def test_a_section_whose_store_is_elsewhere_is_kept_marked_not_re_judged() -> None:
    sections = reproduce_cpu.previous_sections(EARLIER, ["mul_format", "add_length"])
    assert set(sections) == {"mul_format", "add_length"}
    assert reproduce_cpu.carried_section("add_length", sections["add_length"]) is None  # nothing measured
    kept = reproduce_cpu.carried_section("mul_format", sections["mul_format"])
    assert reproduce_cpu.CARRIED_NOTE in kept and "**held**" not in kept
    assert "| **not re-judged** (earlier: held) | max_digits=3: 0.12 vs 0.03 |" in kept
    assert "sqlite:///runs/cpu/mlflow.db --storage-path runs/cpu/ray_results" in kept and "/work" not in kept
    assert reproduce_cpu.carried_section("mul_format", kept) == kept  # kept again as it is
    assert reproduce_cpu.carried_claims(kept) == [
        ("padding beats basic [tb:basic-5]", "**not re-judged** (earlier: held)")
    ]
    glance = reproduce_cpu.summary(
        [reproduce_cpu.GridResult("mul_format", [], None), reproduce_cpu.GridResult("add_length", [], None)],
        {"mul_format": kept},
    )
    assert "| mul_format | padding beats basic [tb:basic-5] | **not re-judged** (earlier: held) |" in glance
    assert "| add_length | all of its claims | not yet run |" in glance


def test_the_report_is_written_from_its_prose_files_and_the_store(tmp_path: Path) -> None:
    """On an empty store: the page's head, the verdict rules and the pre-search come from docs/results/,
    and every grid of the plan (docs/results/plan.yaml) is listed as not yet run, with its parts' notes."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(uri).search_experiments()  # an initialised, empty store
    out = tmp_path / "RESULTS.md"
    reproduce_cpu.write_results(uri, out, reproduce_cpu.INTRO)
    text = out.read_text()
    texts = ROOT / "docs" / "results"
    assert text.startswith((texts / "intro.md").read_text())
    assert reproduce_cpu.VERDICT_RULES in text and (texts / "presearch.md").read_text() in text
    assert "Verdicts (rules: `analysis/verdicts.py`; claims: `analysis/findings.py`" in text
    for grid in reproduce_cpu.grids():
        notes = "; ".join(n for p in PLAN if p.grid == grid for n in (p.note, p.why_not_run) if n)
        assert f"## {grid}\n\n**Not yet run** at cpu scale ({notes or 'planned'})." in text
    # nothing judged, so nothing judged not testable; the pre-search's budget figure beside the report
    assert "### Not testable" not in text and (tmp_path / "results" / "figures" / "budget.png").exists()


def test_a_claim_not_testable_shows_the_pre_searched_budgets_of_its_own_points_seed_by_seed() -> None:
    """From the committed pre-search: mul_format's 3-digit basic point ran with 3 seeds (one estimate each),
    and add_posembed's random embedding at one budget only says that 6,000 steps did not reach 0.9."""
    from types import SimpleNamespace

    from analysis.budget import budget_table
    from analysis.findings import NOT_TESTABLE, Finding

    every = [rec for records in reproduce_cpu.presearch_records().values() for rec in records]
    results = [
        reproduce_cpu.GridResult(
            grid, [], SimpleNamespace(findings=[Finding(grid, "a claim", NOT_TESTABLE, "why")])
        )
        for grid in ("mul_format", "add_posembed")
    ]
    table = reproduce_cpu.untestable(results, budget_table(every, single=True), {})
    # seeds 0 and 1 reached 0.9 at 12,000 steps, seed 2 already at 6,000
    assert "mul_format: format=basic,max_digits=5 (seeds 0, 1): reached at 12,000 (measured)" in table
    assert "mul_format: format=basic,max_digits=5 (seed 2): reached at 6,000 (measured)" in table
    random_embed = "add_posembed: position=random_embed (seeds 0, 1, 2): not reached at 6,000 (measured; one"
    assert random_embed in table
    assert "cpu_tune_steps: task=add_scratchpad: reached at 6,000 (measured)" in table  # one seed: no label


def test_the_glance_names_the_seeds_each_set_of_points_ran_with() -> None:
    """Parts that add seeds to the same points merge; parts of different points keep their own seeds."""
    three, one = (
        Planned("mul_format", 3, ("data.max_digits=3",)),
        Planned("mul_format", 1, ("data.max_digits=5",)),
    )
    assert reproduce_cpu.seeds_of([(three, None), (one, None)]) == (
        "0, 1, 2 (data.max_digits=3); 0 (data.max_digits=5)"
    )
    first, added = Planned("mul_one_digit_weight", 1), Planned("mul_one_digit_weight", (1, 2))
    assert reproduce_cpu.seeds_of([(first, None), (added, None)]) == "0, 1, 2"
    assert reproduce_cpu.seeds_of([(first, None)]) == "0"
