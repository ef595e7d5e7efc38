"""The cpu reproduction (lab.plan, lab.results; `python -m lab.reproduce` runs it): the plan's parts,
how each part finds its sweep in a real MLflow store, and the page composed from the store."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from analysis.findings import seed_span
from arith.config import ConfigError
from arith.overrides import parse_only, parse_set
from experiments.registry import claims_for
from lab.analysis_claims import claims_table, judged_where
from lab.plan import (
    PLAN,
    TAG_COMMAND,
    Planned,
    grids,
    part_runs,
    seeds_of,
    sweep_args_of,
)
from lab.presearch import presearch_records
from lab.results import page as results
from lab.search.sweep import SearchRun
from lab.sweep import parse_args
from sweeps.grids import points

ROOT = Path(__file__).resolve().parent.parent


def shown(plan: Planned, uri: str = "sqlite:////a dir/mlflow.db", storage: str = "/a dir/ray") -> str:
    return "python " + shlex.join(plan.command(uri, storage))


@pytest.mark.parametrize("plan", PLAN, ids=lambda p: " ".join(p.sweep_args()[1:]))
def test_every_part_is_a_valid_sweep_that_selects_points(plan: Planned) -> None:
    args = parse_args(plan.command("sqlite:///x.db", "/tmp/ray")[2:])
    assert (args.search if plan.search else args.grid) == plan.grid
    assert args.scale == plan.scale in ("cpu", "cpu_recipe")
    overrides = parse_set(args.sets) if args.sets else None
    # a search's part: a slice of the search's own grid, at the scale and seeds it declares
    search = SearchRun.of(plan.grid, args.scale, args.seeds) if plan.search else None
    if search:
        assert search.scale.name == plan.scale and search.seeds == tuple(plan.seed_values)
    try:
        grid, scale = (search.grid, search.scale) if search else (plan.grid, plan.scale)
        selected = points(grid, scale, args.seeds, overrides, only=parse_only(args.only))
    except ConfigError:  # only a record may have a recipe rejected since: a part ended early, never rerun
        assert plan.ended_early
    else:
        assert {c.train.seed for c in selected} == set(plan.seed_values)
    # the part is found again from the command it is tagged with, wherever its store was
    assert sweep_args_of(shown(plan)) == plan.sweep_args()


def test_parts_of_a_grid_are_distinct() -> None:
    keys = [tuple(plan.sweep_args()) for plan in PLAN]
    assert len(set(keys)) == len(keys)
    assert grids()[:2] == ["cpu_tune_reverse", "cpu_tune_mul"]


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


def test_a_section_measured_before_the_archives_is_included_verbatim_and_not_re_judged() -> None:
    """cpu_tune_reverse (and two more) have no archive: their committed sections (docs/results/unarchived/)
    stand in for them."""
    kept = results.unarchived_sections()
    assert set(kept) == {"cpu_tune_reverse", "cpu_tune_mul", "position_schemes"}
    text = kept["cpu_tune_reverse"]
    assert text.startswith("## cpu_tune_reverse\n\n**Measured before the sweeps were archived; not re-judged")
    assert "/work" not in text
    assert not any((ROOT / "docs" / "results" / "sweeps").glob("cpu_tune_reverse__*.jsonl"))
    glance = results.summary(
        [results.GridResult("mul_format", [], None), results.GridResult("cpu_tune_reverse", [], None)],
        {"cpu_tune_reverse"},
    )
    assert "| mul_format | all of its claims | not yet run |" in glance and "cpu_tune_reverse" not in glance


def test_the_report_is_written_from_its_prose_files_and_the_store(tmp_path: Path) -> None:
    """On an empty store: the page's head, the verdict rules and the pre-search come from docs/results/,
    and every grid of the plan (docs/results/plan.yaml) is listed as not yet run, with its parts' notes."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(uri).search_experiments()  # an initialised, empty store
    out = tmp_path / "RESULTS.md"
    results.write_results(uri, out)
    text = results.record_text(out)
    texts = ROOT / "docs" / "results"
    # the page opens with the claims table; the intro is a page of its own, its contents list before its
    # first section (lab.contents), and so are the findings
    assert out.read_text().split("\n\n")[2].startswith("| the paper's claim | paper | verdict |")
    about = (tmp_path / "results" / "report" / "about.md").read_text()
    listed = about[about.index("**Contents**") : about.index("\n## ")] + "\n"
    assert about.replace(listed, "", 1).startswith((texts / "intro.md").read_text())
    findings = (tmp_path / "results" / "report" / "findings.md").read_text()
    assert "- [Findings at a glance](#findings-at-a-glance)" in findings
    assert results.VERDICT_RULES in text and (texts / "presearch.md").read_text() in text
    assert "claims and their checks: `experiments/catalog/`" in text
    kept = results.unarchived_sections()
    for grid in grids():
        if any(p.search for p in PLAN if p.grid == grid):  # a search: in the core-minutes, its own section
            first = next(p for p in PLAN if p.grid == grid and p.search)
            planned = str(first.estimate_core_min or "not declared")
            cells = [
                first.scale,
                first.seeds_arg.rstrip(","),
                " ".join(first.only),
                "",
                planned,
                "not yet run",
            ]
            part = f"| {grid} | {' | '.join(cells)} |"
            assert part in text
            assert f"## {grid}\n" not in text
            continue
        if grid in kept:
            assert kept[grid] in text
            continue
        notes = "; ".join(n for p in PLAN if p.grid == grid for n in (p.note, p.why_not_run) if n)
        scale = next(p.scale for p in PLAN if p.grid == grid)
        assert f"## {grid}\n\n**Not yet run** at {scale} scale ({notes or 'planned'})." in text
    # an empty store judges nothing; the banked GPU batches (docs/results/gpu/) still judge their claim, of
    # the claims of every planned grid (length_gen's beside the paper's), each counted once
    total = len({c.text for grid in grids() for c in claims_for(grid)})
    assert total > 10  # the paper's ten and those beyond it
    assert f"**Judged: 1 of the {total} claims below**: tb:basic-5 vs tb:padding-5 (a claim judged" in text
    # nothing judged, so nothing judged not testable; the pre-search's budget figure beside the report
    assert "### Not testable" not in text and (tmp_path / "results" / "figures" / "budget.png").exists()


def test_a_claim_not_testable_shows_the_pre_searched_budgets_of_its_own_points_seed_by_seed() -> None:
    """From the committed pre-search: mul_format's 3-digit basic point ran with 3 seeds (one estimate each),
    and add_posembed's random embedding at one budget only says that 6,000 steps did not reach 0.9."""
    from types import SimpleNamespace

    from analysis.findings import NOT_TESTABLE, Finding
    from lab.budget import budget_table

    every = [rec for records in presearch_records().values() for rec in records]
    judged = [
        results.GridResult(
            grid, [], SimpleNamespace(findings=[Finding(grid, "a claim", NOT_TESTABLE, "why")])
        )
        for grid in ("mul_format", "add_posembed")
    ]
    table = results.untestable_table(judged, budget_table(every, single=True), {})
    # read as the gate reads (the lowest of the cells the paper's basic-5 model learned, 2x2 among them), no
    # seed reached 0.9 at 6,000 or 12,000 steps: each seed's own extrapolation
    assert "mul_format: format=basic,max_digits=5 (seed 0): ~150,000 (51x the 3,000-step budget)" in table
    assert "mul_format: format=basic,max_digits=5 (seed 2): ~4,300,000" in table
    random_embed = "add_posembed: position=random_embed (seeds 0, 1, 2): not reached at 6,000 (measured; one"
    assert random_embed in table
    assert "cpu_tune_steps: task=add_scratchpad: reached at 6,000 (measured)" in table  # one seed: no label
    assert "judged in" not in table  # no other grid judged "a claim"


def test_the_glance_lists_each_claim_once_with_every_verdict_and_where() -> None:
    """A claim judged in two grids (and not testable in a third) is one row naming both verdicts; a claim
    only tried is not testable with the grids that tried it; a declared claim no grid has run says so."""
    from analysis.findings import CANNOT_TELL, HELD, NOT_TESTABLE, Finding
    from experiments.claim import Claim
    from experiments.verdicts import Contrast, Outcome, Side

    def outcome(seeds: list[int], gap: float) -> Outcome:
        a = Side("random_embed", pd.Series([0.9 + gap + 0.01 * (s % 3) for s in seeds], index=seeds))
        b = Side("none", pd.Series([0.9 - 0.02 * (s % 2) for s in seeds], index=seeds))
        return Outcome(contrasts=(Contrast(((1.0, a), (-1.0, b)), "random_embed - none"),))

    rand, rev, mul = "random embedding fixes it", "no embedding generalises", "padding beats basic"
    findings = [
        ("reverse_posembed", Finding("reverse_posembed", f"{rand} [fig:randembed]", NOT_TESTABLE, "seed 2")),
        (
            "recipe",
            Finding("recipe", f"{rand} [fig:randembed]", CANNOT_TELL, "", outcome([0, 1, 2, 3, 4], 0.0)),
        ),
        (
            "replication",
            Finding("replication", f"{rand} [fig:randembed]", HELD, "", outcome(list(range(20, 30)), 0.1)),
        ),
        ("reverse_posembed", Finding("reverse_posembed", f"{rev} [fig:testacc_rev]", NOT_TESTABLE, "seed 2")),
        ("add_posembed", Finding("add_posembed", f"{rev} [fig:testacc_rev]", NOT_TESTABLE, "seed 0")),
    ]
    claims = [
        Claim(text, source, lambda *a: None)
        for text, source in [(rand, "fig:randembed"), (rev, "fig:testacc_rev"), (mul, "tb:basic-5")]
    ]
    table = claims_table(findings, claims).splitlines()
    assert len(table) == 2 + 3  # header, rule, one row a claim
    randembed, testacc, padding = table[2:]
    assert randembed.startswith(f"| {rand} | fig:randembed | **the seeds cannot tell** / **held** | recipe: ")
    assert "replication: **held**, +0.1" in randembed and "seeds 20-29 (10, paired)" in randembed
    assert "reverse_posembed" not in randembed  # its not-testable row is not a verdict
    assert testacc == (
        f"| {rev} | fig:testacc_rev | not testable | tried in reverse_posembed, add_posembed (their rows "
        "below say why) |"
    )
    assert padding == f"| {mul} | tb:basic-5 | not yet run |  |"
    assert seed_span([4, 0, 1, 2, 3]) == "0-4" and seed_span([0, 2, 3, 7]) == "0, 2-3, 7"


def _claims_table(text: str) -> list[tuple[str, str, str]]:
    """(claim, paper, verdict) of each row of the first table headed "| the paper's claim | paper |"."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| the paper's claim | paper |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        claim, paper, verdict = (cell.strip() for cell in line.strip("|").split(" | ")[:3])
        rows.append((claim, paper, verdict))
    return rows


#: the pages written by hand that quote the report's verdicts and numbers: README's summary and the account
#: of the claims it links to
HAND_WRITTEN = ("README.md", "docs/CLAIMS.md")


@pytest.mark.parametrize("page", HAND_WRITTEN)
def test_the_readme_states_each_claims_verdict_as_the_report_does(page: str) -> None:
    """README's table of the paper's claims (written by hand, shortened), and docs/CLAIMS.md's, say of
    each claim what the generated docs/RESULTS.md says: its paper label and verdict, claim for claim."""
    report = _claims_table((ROOT / "docs" / "RESULTS.md").read_text())  # its first table
    written = _claims_table((ROOT / page).read_text())
    assert len(report) == 10 and written == report


def _holm_p_values(text: str) -> set[str]:
    """Every value of the "p (Holm)" column of each table that has one (the findings, the gpu claims)."""
    values: set[str] = set()
    column = None
    for line in text.splitlines():
        if not line.startswith("|"):
            column = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if "p (Holm)" in cells:
            column = cells.index("p (Holm)")
        elif column is not None and len(cells) > column and cells[column].strip("-"):
            values.add(cells[column])
    return values


@pytest.mark.parametrize("page", HAND_WRITTEN)
def test_the_readme_quotes_the_holm_p_values_and_seed_counts_the_report_holds(page: str) -> None:
    """README's prose (written by hand), and docs/CLAIMS.md's, quote Holm-adjusted p values and the seeds
    a side that would tell; each must be one the generated docs/RESULTS.md holds, so that a new family (a
    claim judged, a rule changed) cannot leave either quoting the old one."""
    import re

    report = results.record_text(ROOT / "docs" / "RESULTS.md")
    readme = (ROOT / page).read_text()
    quoted = re.findall(r"Holm-adjusted\s+p\s*=\s*([0-9][0-9.]*(?:e[+-]?\d+)?)", readme)
    holm = _holm_p_values(report)
    assert quoted and holm
    assert set(quoted) <= holm, f"{page} quotes Holm p values not in RESULTS.md: {set(quoted) - holm}"
    would = re.findall(r"about\s+(\d+)\s+seeds\s+a\s+side\s+would", readme)
    told = set(re.findall(r"about (\d+) seeds per side would", report))
    assert would, f"{page} quotes no seeds a side that would tell"
    assert set(would) <= told, f"{page}'s seeds a side not in RESULTS.md: {set(would) - told}"


def test_a_claim_not_testable_in_one_grid_says_where_it_is_judged() -> None:
    """A claim not testable in its cpu grid but judged in another (a recipe's grid, a gpu batch): its row
    names where, with the verdict and its numbers."""
    from types import SimpleNamespace

    from analysis.findings import HELD, NOT_TESTABLE, Finding
    from experiments.verdicts import Contrast, Outcome, Side

    claim = "padding + reversed product beats basic [tb:basic-5 vs tb:padding-5]"
    seeds = [0, 1, 2, 3, 4]
    padded = Side("padding", pd.Series([1.0, 0.99, 1.0, 0.98, 1.0], index=seeds))
    basic = Side("basic", pd.Series([0.2, 0.15, 0.1, 0.25, 0.18], index=seeds))
    outcome = Outcome(contrasts=(Contrast(((1.0, padded), (-1.0, basic)), "padding - basic"),))
    held = Finding("mul_format", claim, HELD, "", outcome)
    untested = Finding("mul_format", claim, NOT_TESTABLE, "not learned")
    where = judged_where([("mul_format (gpu: b3)", held), ("mul_format", untested)])
    (said,) = where[claim]
    assert said.startswith("mul_format (gpu: b3): **held** (+0.818, 95% CI [")
    assert said.endswith("seeds 0, 1, 2, 3, 4 (paired))")
    grid = results.GridResult("mul_format", [], SimpleNamespace(findings=[untested]))
    table = results.untestable_table([grid], pd.DataFrame(), {}, judged=where)
    assert "not learned; judged in mul_format (gpu: b3): **held** (+0.818" in table


def test_the_glance_names_the_seeds_each_set_of_points_ran_with() -> None:
    """Parts that add seeds to the same points merge; parts of different points keep their own seeds."""
    three, one = (
        Planned("mul_format", 3, ("data.max_digits=3",)),
        Planned("mul_format", 1, ("data.max_digits=5",)),
    )
    assert seeds_of([(three, None), (one, None)]) == ("0, 1, 2 (data.max_digits=3); 0 (data.max_digits=5)")
    first, added = Planned("mul_one_digit_weight", 1), Planned("mul_one_digit_weight", (1, 2))
    assert seeds_of([(first, None), (added, None)]) == "0, 1, 2"
    assert seeds_of([(first, None)]) == "0"
    # points run apart on the same seeds are named together
    grid = "add_posembed_recipe_long"
    apart = [Planned(grid, (100,), (f"model.position={p}",)) for p in ("none", "learned")]
    assert seeds_of([(part, None) for part in [*apart, Planned(grid, (0, 1))]]) == (
        "100 (model.position=none, model.position=learned); 0, 1"
    )
    # one part that keeps two values of a setting ran each of them, not a point with both
    both = Planned(grid, (9,), ("model.position=random_embed", "model.position=learned"))
    parts = [Planned(grid, (5, 6), both.only[:1]), both, Planned(grid, (5,), apart[1].only)]
    assert seeds_of([(part, None) for part in parts]) == (
        "5, 6, 9 (model.position=random_embed); 5, 9 (model.position=learned)"
    )


def test_the_script_is_a_command_line_over_the_analysis() -> None:
    """`python -m lab.reproduce` runs from any folder (the installed packages, no sys.path edit)."""
    out = subprocess.run(
        [sys.executable, "-m", "lab.reproduce", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT / "docs",
    )
    assert "--report-only" in out.stdout


def test_the_randembed_replication_runs_its_two_points_on_seeds_fixed_before_it_runs() -> None:
    """reverse_posembed_replication: fig:randembed's two points exactly as reverse_posembed_recipe ran them,
    judged by that claim alone, on 10 seeds no reversal sweep has used (the plan's and the archives')."""
    from experiments.registry import EXPERIMENTS

    replication = EXPERIMENTS["reverse_posembed_replication"]
    assert [c.source for c in replication.claims] == ["fig:randembed"]
    (part,) = [p for p in PLAN if p.grid == "reverse_posembed_replication"]
    assert part.scale == "cpu_recipe" and part.seed_values == list(range(20, 30))
    assert part.estimate_core_min is not None and "fixed before any run" in part.note

    def training(cfg) -> dict:
        return {k: v for k, v in cfg.flat().items() if not k.startswith("tracking.")}

    # the same training as the recipe's fig:randembed points: 1e-5 x 50, 6,000 bf16 steps
    recipe = points("reverse_posembed_recipe", "cpu_recipe", [20])
    compared = {
        c.model.position: training(c) for c in recipe if "fig:randembed" in c.tracking.tags["paper_table"]
    }
    ours = {c.model.position: training(c) for c in points(part.grid, "cpu_recipe", [20])}
    assert ours == compared and set(ours) == {"none", "random_embed"}
    assert all(c["train.lr"] == 5e-4 and c["train.max_steps"] == 6000 for c in ours.values())
    assert {c["train.precision"] for c in ours.values()} == {"bf16"}
    # ... run in fp32, declared on the part before it ran (bf16 is emulated on some of the CPUs it runs on)
    assert part.sets == ("train.precision=fp32",) and "Precision, fixed before any run" in part.note
    # fresh: no other reversal part of the plan, and no other archived reversal trial, ran these seeds
    used = {s for p in PLAN if p.grid.startswith("reverse_posembed") and p is not part for s in p.seed_values}
    for path in (ROOT / "docs" / "results" / "sweeps").glob("reverse_posembed*.jsonl"):
        if path.name.startswith(f"{part.grid}__"):  # its own archive, once it ran
            continue
        lines = [json.loads(line) for line in path.read_text().splitlines()[2:]]
        used |= {int(t["tags"]["seed"]) for t in lines if t.get("parent_run_id")}
    assert used and not used & set(part.seed_values)
