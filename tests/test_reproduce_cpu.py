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

from analysis import by_claim, cell_text
from analysis.ui_view import VIEW_TAG
from arith.config import ConfigError, parse_only, parse_set
from lab.plan import (
    PLAN,
    TAG_COMMAND,
    TAG_COMMITS,
    TAG_MACHINE,
    TAG_WALL,
    Planned,
    grids,
    part_runs,
    ran_lines,
    seeds_of,
    sweep_args_of,
)
from lab.presearch import presearch_records
from lab.results import page as results
from lab.search.sweep import SearchRun
from lab.sweep import parse_args
from sweeps.errors import SweepError
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
            planned = str(first.estimate_core_min)
            cells = ["cpu_recipe", "100", " ".join(first.only), "", planned, "not yet run"]
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
    # an empty store judges nothing; the banked GPU batches (docs/results/gpu/) still judge their claim
    assert "**Judged: 1 of the 10 claims below**: tb:basic-5 vs tb:padding-5 (a claim judged" in text
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
        Claim(text, source, "", lambda *a: None)
        for text, source in [(rand, "fig:randembed"), (rev, "fig:testacc_rev"), (mul, "tb:basic-5")]
    ]
    table = by_claim.claims_table(findings, claims).splitlines()
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
    assert by_claim.seed_span([4, 0, 1, 2, 3]) == "0-4" and by_claim.seed_span([0, 2, 3, 7]) == "0, 2-3, 7"


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
    where = by_claim.judged_where([("mul_format (gpu: b3)", held), ("mul_format", untested)])
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


def test_a_part_resumed_under_other_code_names_its_commits() -> None:
    (part,) = [p for p in PLAN if p.grid == "reverse_posembed_replication"]
    tags = {TAG_COMMAND: "python sweeps/run.py --grid x", TAG_WALL: "600", TAG_MACHINE: "AMD EPYC"}
    one = ran_lines(part, {**tags, TAG_COMMITS: "a" * 40}, 0)
    assert [line.split(":")[0] for line in one] == ["- command", "  - wall time", "  - seeds"]
    both = ran_lines(part, {**tags, TAG_COMMITS: f"{'a' * 40}; {'b' * 40}-dirty"}, 0)
    assert both[-1] == (
        f"  - commits: started under {'a' * 12}, resumed under {'b' * 12} (a trial resumed trained on under "
        "that code)"
    )


def test_a_grid_not_yet_run_shows_its_command_and_planned_core_minutes() -> None:
    (part,) = [p for p in PLAN if p.grid == "reverse_posembed_replication"]
    text = results.section(results.GridResult(part.grid, [(part, None)], None, [None]))
    assert text.startswith(
        "## reverse_posembed_replication\n\n**Not yet run** at cpu_recipe scale (fig:randembed"
    )
    assert "`python -m lab.reproduce --grids reverse_posembed_replication`" in text
    command = (
        "python -m lab.sweep --grid reverse_posembed_replication --scale cpu_recipe --seeds "
        "20,21,22,23,24,25,26,27,28,29 --set train.precision=fp32 --tracking-uri "
        "sqlite:///runs/cpu/mlflow.db --storage-path runs/cpu/ray_results"
    )
    assert f"- `{command}`\n  - core-minutes: planned {part.estimate_core_min:,.0f}" in text


def test_a_stopped_part_is_found_again_by_its_command_and_its_sessions_add_up(tmp_path: Path) -> None:
    """The sweep folder a session leaves records the command line that started it, less where it ran, so
    the next session's reproduction of the same part resumes it (and another part's starts its own); the
    sweep's record then holds every session's wall time and machine."""
    from arith.tracking.commands import sweep_identity
    from sweeps.grids import get_grid
    from sweeps.scales import get_scale
    from sweeps.storage import SweepStorage, sweep_state

    (part,) = [p for p in PLAN if p.grid == "reverse_posembed_replication"]
    started = [*part.command("sqlite:////a dir/mlflow.db", "/a dir/ray"), "--resume", "--quiet"]
    assert sweep_identity(started[2:]) == part.sweep_args()
    assert sweep_identity(["--grid", "demo", "--tracking-uri=sqlite:///x.db", "--seeds", "2"]) == [
        "--grid",
        "demo",
        "--seeds",
        "2",
    ]

    folders = SweepStorage(str(tmp_path / "ray_results"))
    assert folders.stopped(part.grid, part.scale, part.sweep_args()) is None  # nothing to resume
    grid, scale = get_grid(part.grid), get_scale(part.scale)
    name = f"{part.grid}-{part.scale}-20261129-000000"
    folders.create(
        name, sweep_state(grid, scale, "sqlite:///x.db", "abc", {"CPU": 1.0}, {}, part.sweep_args())
    )
    assert folders.stopped(part.grid, part.scale, part.sweep_args()) == name
    other = [*part.sweep_args()[:-2], "--set", "train.precision=bf16"]
    assert folders.stopped(part.grid, part.scale, other) is None  # another part's command: a sweep of its own
    # a later part's sweep of the same grid does not hide this one: each resumes its own
    later = f"{part.grid}-{part.scale}-20261130-000000"
    folders.create(later, sweep_state(grid, scale, "sqlite:///x.db", "def", {"CPU": 1.0}, {}, other))
    assert folders.stopped(part.grid, part.scale, part.sweep_args()) == name
    assert folders.stopped(part.grid, part.scale, other) == later
    assert folders.latest(part.grid, part.scale) == later  # a bare --resume: the latest
    with pytest.raises(SweepError, match="started as") as err:
        folders.latest(part.grid, part.scale, [*other, "--seeds", "3"])
    assert name in str(err.value) and later in str(err.value)  # it lists what is there to resume

    assert folders.add_session(name, 3000.0, "AMD EPYC (no native bf16), 2 CPU cores, Linux", "a1") == (
        3000.0,
        "AMD EPYC (no native bf16), 2 CPU cores, Linux",
        "a1",
    )
    wall, machines, commits = folders.add_session(
        name, 1200.0, "Intel Xeon (native bf16), 2 CPU cores, Linux", "b2"
    )
    assert wall == 4200.0 and machines.split("; ") == [
        "AMD EPYC (no native bf16), 2 CPU cores, Linux",
        "Intel Xeon (native bf16), 2 CPU cores, Linux",
    ]
    assert commits == "a1; b2"  # the code each session ran, in order
    # a running session noted again and again (its wall time so far) is one session, its latest note
    for so_far in (60.0, 120.0):
        wall, _, commits = folders.add_session(name, so_far, "Intel Xeon", "c3", session="s3")
    assert wall == 4320.0 and commits == "a1; b2; c3" and len(folders.session_entries(name)) == 3
    assert folders.state(name)["args"] == part.sweep_args()  # the sessions keep what identifies the sweep
    assert not list((tmp_path / "ray_results").rglob("*.part"))  # each file written whole
    # sessions noted in sweep.json itself, as sweeps first noted them, still count, first
    folders.save(
        name, {**folders.state(name), "sessions": [{"wall_s": 10.0, "machine": "Zen 3", "commit": "z0"}]}
    )
    wall, _, commits = folders.sessions(name)
    assert wall == 4330.0 and commits == "z0; a1; b2; c3"


def test_a_part_ended_early_is_archived_as_it_stands_and_never_resumed(tmp_path: Path) -> None:
    """The plan ends a stopped part for good (`ended_early`: what its other trials could not change): the
    reproduction records and archives its sweep as the stopped session left it, its finished trials kept,
    the one a session left RUNNING marked KILLED, and the part counts as run (its section says why)."""
    import dataclasses

    from mlflow import MlflowClient

    from arith.tracking.archive import read_archive
    from lab.run_part import end_part
    from sweeps.grids import get_grid
    from sweeps.scales import get_scale
    from sweeps.storage import SweepStorage, sweep_state

    uri, storage = f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "ray_results"
    (judged,) = [p for p in PLAN if p.grid == "add_posembed_recipe_long" and p.seeds == (0, 1, 2, 3, 4)]
    part = dataclasses.replace(judged, ended_early="seed 0 of random_embed missed the gate")
    client = MlflowClient(uri)
    experiment = client.create_experiment(part.grid, artifact_location=(tmp_path / "art").as_uri())
    parent = client.create_run(experiment, tags={"sweep": "1", "grid": part.grid, "git_commit": "c0"})
    client.set_terminated(parent.info.run_id, "KILLED")  # a Ctrl+C ended the session
    trial = {"mlflow.parentRunId": parent.info.run_id}
    done = client.create_run(experiment, tags={**trial, "seed": "0"}, run_name="position=random_embed,seed=0")
    client.log_metric(done.info.run_id, "test_acc/in_range", 0.73)
    client.set_terminated(done.info.run_id, "FINISHED")
    stopped = client.create_run(experiment, tags={**trial, "seed": "1"}, run_name="position=learned,seed=1")
    a_minute_in = stopped.info.start_time + 60_000
    client.log_metric(stopped.info.run_id, "train/loss", 2.5, step=20, timestamp=a_minute_in)
    lost = client.create_run(experiment, tags={**trial, "seed": "2"}, run_name="position=learned,seed=2")

    folders = SweepStorage(str(storage))
    end_part(part, uri, str(storage), archives=tmp_path)  # nothing stopped yet: nothing to archive
    assert not (tmp_path / part.archive_name).exists()
    name = f"{part.grid}-{part.scale}-20261129-072717"
    grid, scale = get_grid(part.grid), get_scale(part.scale)
    folders.create(
        name, sweep_state(grid, scale, uri, parent.info.run_id, {"CPU": 1.0}, {}, part.sweep_args())
    )
    folders.add_session(name, 3000.0, "AMD EPYC (no native bf16), 2 CPU cores, Linux", "c1")
    folders.add_session(name, 600.0, "AMD EPYC (no native bf16), 2 CPU cores, Linux", "c2")
    end_part(part, uri, str(storage), archives=tmp_path)

    assert client.get_run(done.info.run_id).info.status == "FINISHED"
    # stopped after training a while: KILLED when it last logged; stopped at its start: no run left
    assert client.get_run(stopped.info.run_id).info.status == "KILLED"
    assert client.get_run(stopped.info.run_id).info.end_time == a_minute_in
    assert client.get_run(lost.info.run_id).info.lifecycle_stage == "deleted"
    tags = client.get_run(parent.info.run_id).data.tags
    assert tags["reproduce.ended_early"] == part.ended_early
    assert tags[TAG_WALL] == "3600" and tags[TAG_COMMITS] == "c0; c1; c2"
    assert sweep_args_of(tags[TAG_COMMAND]) == part.sweep_args()
    ((_, found),) = part_runs(client, part.grid, (part,))
    assert found.info.run_id == parent.info.run_id
    header, (_parent, *runs) = read_archive(tmp_path / part.archive_name)
    assert header["trials"] == 2 and {r["status"] for r in runs} == {"KILLED", "FINISHED"}
    assert len(folders.session_entries(name)) == 2  # not resumed: no session added
    lines = ran_lines(part, tags, 0)
    assert "  - seeds: 0, 1, 2, 3, 4 planned" in lines
    assert f"  - **ended early**, its other trials not run: {part.ended_early}" in lines
    whole = dataclasses.replace(part, ended_early="")
    # the findings' "sweeps' seeds" name only the seeds its finished trials ran
    assert seeds_of([(part, None)], {0, 7}) == "0" and seeds_of([(whole, None)], {0}) == "0, 1, 2, 3, 4"


def test_the_machine_names_its_processor_its_family_and_whether_it_has_native_bf16(tmp_path: Path) -> None:
    from arith.training.hardware import cpu_name

    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum\nflags\t\t: fpu avx2 amx_bf16 amx_tile\n"
    )
    assert cpu_name(info) == "Intel(R) Xeon(R) Platinum (native bf16)"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2\n")
    assert cpu_name(info) == "AMD EPYC (no native bf16)"
    # a VM's model name may be the vendor's alone: the family and model numbers tell a Zen 4 from a Zen 5
    zen = "processor\t: 0\ncpu family\t: {}\nmodel\t\t: {}\nmodel name\t: AMD EPYC\nflags\t\t: avx512_bf16\n"
    info.write_text(zen.format(25, 17))
    assert cpu_name(info) == "AMD EPYC (family 25 model 17, native bf16)"
    info.write_text(zen.format(26, 2))
    assert cpu_name(info) == "AMD EPYC (family 26 model 2, native bf16)"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def a_session_of_a_part(
    tmp_path: Path, request, note_every_s: float | None = None
) -> tuple[Planned, str, Path, str, dict[str, str]]:
    """A smoke part of the fault tests' grid (a trial that checkpoints early), its store and sweep folder,
    the code of a session that runs it (`run_part` in a fresh interpreter; `note_every_s`: how often it
    notes its wall time) and the environment to run that in (a Ray temp folder of its own). Started by
    `start_session`."""
    import shutil
    import tempfile

    from test_faults import GRID, clean_env

    uri, storage = f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "ray_results"
    part = Planned(
        grid=GRID,
        scale="smoke",
        seeds=1,
        only=("model.position=learned",),
        sets=("train.epochs=30", "train.eval_epochs=[2,4]"),
    )
    code = (
        "import pathlib\n"
        "from lab.plan import Planned\n"
        "from lab import run_part as reproduce\n"
        + (f"reproduce.NOTE_EVERY_S = {note_every_s}\n" if note_every_s else "")
        + f"part = Planned(grid={part.grid!r}, scale='smoke', seeds=1,"
        f" only={part.only!r}, sets={part.sets!r})\n"
        f"reproduce.run_part(part, {uri!r}, {str(storage)!r}, archives=pathlib.Path({str(tmp_path)!r}))\n"
    )
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # a socket path in tmp_path is too long for Ray
    request.addfinalizer(lambda: shutil.rmtree(ray_tmp, ignore_errors=True))
    return part, uri, storage, code, clean_env(RAY_TMPDIR=ray_tmp)


def start_session(code: str, env: dict[str, str], log) -> subprocess.Popen:
    """A session of `a_session_of_a_part`, leading its own process session (its sweep and Ray in it), so that
    a test can end it as a Ctrl-C or a machine's stop would."""
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_a_part_stopped_mid_trial_resumes_in_the_next_session(tmp_path: Path, request) -> None:
    """A session ends (Ctrl-C to the reproduction and its sweep) while a part's trial is past its first
    checkpoint; the next session's reproduction of the same part resumes that sweep rather than starting
    another: one parent run, each trial one run whose history holds every step once (a restart from step 0
    would log its first steps twice), and the record's wall time is both sessions'."""
    import os
    import signal

    from test_faults import GRID, WAIT_S, check_histories, checkpoints_of, end_session, wait_for

    from arith.tracking import store
    from sweeps.storage import SweepStorage

    part, uri, storage, code, env = a_session_of_a_part(tmp_path, request)
    log = (tmp_path / "session1.log").open("w")
    first = start_session(code, env, log)
    try:
        wait_for(
            lambda: any(p.name == "checkpoint_000001" for p in checkpoints_of(storage)),
            first,
            WAIT_S,
            "checkpoints",
        )
        os.killpg(first.pid, signal.SIGINT)  # the session ends: Ctrl-C reaches the script, its sweep and Ray
        first.wait(timeout=WAIT_S)
    finally:
        end_session(first.pid)
        log.close()
    assert first.returncode != 0
    said = (tmp_path / "session1.log").read_text()
    # a stop, not a failure: the reproduction says so and exits 130, without a traceback
    assert "SweepInterrupted" in said and "CalledProcessError" not in said, said[-3000:]
    folders = SweepStorage(str(storage))
    (name,) = [p.name for p in storage.iterdir() if p.is_dir()]
    assert folders.stopped(part.grid, part.scale, part.sweep_args()) == name
    assert len(folders.session_entries(name)) == 1
    # a later sweep of the grid in the store (another part's, or one imported from another machine's
    # archive): the resumed part records and archives its own parent run, not the store's latest
    client = store.client(uri)
    (experiment,) = store.experiment_ids(client, [GRID])
    later = client.create_run(experiment, tags={"sweep": "1", "grid": GRID, "scale": part.scale}).info.run_id
    client.set_terminated(later, "FINISHED")

    second = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=2 * WAIT_S
    )
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "--resume (a stopped session's)" in second.stdout
    assert [p.name for p in storage.iterdir() if p.is_dir()] == [name]  # no second sweep
    check_histories(uri, 1)
    sessions = folders.session_entries(name)
    assert len(sessions) == 2
    parent = client.get_run(folders.state(name)["parent_run_id"])
    assert TAG_COMMAND not in client.get_run(later).data.tags  # the later sweep's record left alone
    assert float(parent.data.tags[TAG_WALL]) == pytest.approx(sum(s["wall_s"] for s in sessions), abs=1)
    # both sessions ran this checkout: one commit on record, the sweep's own
    assert sessions[0]["commit"] == sessions[1]["commit"] == parent.data.tags[TAG_COMMITS]
    assert sweep_args_of(parent.data.tags[TAG_COMMAND]) == part.sweep_args()  # its part's, without --resume
    assert (tmp_path / part.archive_name).exists()


@pytest.mark.slow
def test_a_session_whose_machine_stops_keeps_its_wall_time(tmp_path: Path, request) -> None:
    """A machine stops without warning (every process of the session SIGKILLed: no Ctrl-C, no finally)
    while a part's sweep runs: the sweep's sweep.json still holds the session, with the wall time it had
    run until its last note (noted every second here, every minute in a reproduction), and the part is
    found as a stopped sweep for the next session to resume."""
    from test_faults import WAIT_S, checkpoints_of, end_session, wait_for

    from sweeps.storage import SweepStorage

    part, _, storage, code, env = a_session_of_a_part(tmp_path, request, note_every_s=1.0)
    started = time.monotonic()
    with (tmp_path / "session.log").open("w") as log:
        session = start_session(code, env, log)
        try:
            wait_for(lambda: any(checkpoints_of(storage)), session, WAIT_S, "a checkpoint")
            time.sleep(2)  # a note after the checkpoint
        finally:
            end_session(session.pid)  # the machine stops
        session.wait(timeout=30)
    ran_s = time.monotonic() - started
    folders = SweepStorage(str(storage))
    name = folders.stopped(part.grid, part.scale, part.sweep_args())
    assert name is not None, (tmp_path / "session.log").read_text()[-3000:]
    (noted,) = folders.session_entries(name)
    assert 0 < noted["wall_s"] <= ran_s and noted["session"], noted


def test_the_findings_lead_counts_a_claim_judged_in_two_grids_once() -> None:
    from analysis.findings import Finding

    def finding(grid: str, claim: str, status: str) -> Finding:
        return Finding(grid=grid, claim=claim, status=status, evidence="")

    rand, rev = "random embedding fixes it [fig:randembed]", "no embedding generalises [fig:testacc_rev]"
    findings = [
        finding("reverse_posembed_recipe", rand, "the seeds cannot tell"),
        finding("reverse_posembed_replication", rand, "held"),
        finding("reverse_posembed", rev, "not testable"),
    ]
    claims = ["random embedding fixes it", "no embedding generalises", "a claim no grid has run"]
    line = by_claim.judged_line(findings, claims)
    assert line.startswith("**Judged: 1 of the 3 claims below**: fig:randembed (a claim judged in several")
    assert "counts once here; its 2 verdicts are the family Holm's correction adjusts over)" in line
    assert by_claim.judged_line([], claims).startswith("**Judged: 0 of the 3 claims below** (")


def test_a_grid_whose_plan_has_parts_waiting_is_not_judged_yet(tmp_path: Path) -> None:
    """The plan fixes a judged sweep's seeds before any part runs, so a verdict on the parts run so far is
    an interim look: from the real archives of fig:acc_add_rand's sweep, less one of its parts, every claim
    of the grid reads not testable, says how many parts wait, keeps what the parts read as no verdict, and
    stays out of Holm's family; a claim not testable on its own ground (mul_simple_case_long's, less its
    seeds 3-10: its seeds 0-2 chose its budget) keeps that reason first; a part the plan ended before it
    ran (add_length's seeds 1-2) does not wait; the fig:randembed replication, its one part run, is
    judged."""
    from analysis.findings import NOT_TESTABLE, one_family
    from lab.plan import ARCHIVES, restore_archives

    # without its seed-9 part every model still has 4 seeds (5-8), enough for a verdict by the rules
    held_back = (
        "add_posembed_recipe_24k__cpu_recipe__seed-9__model.position=random_embed__model.position=learned",
        "mul_simple_case_long__seeds-3-10",
    )
    folder = tmp_path / "archives"
    folder.mkdir()
    for path in ARCHIVES.glob("*.jsonl"):
        ours = path.name.startswith(
            (
                "add_posembed_recipe_24k__",
                "reverse_posembed_replication__",
                "add_length__",
                "mul_simple_case_long__",
            )
        )
        if ours and path.stem not in held_back:
            (folder / path.name).symlink_to(path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    restore_archives(uri, folder)
    by_grid = {r.grid: r for r in results.grid_results(uri) if r.analysis is not None}

    partway = by_grid["add_posembed_recipe_24k"]
    waiting = sum(plan.still_to_run(run) for plan, run in partway.parts)
    assert waiting >= 1 and partway.analysis.findings
    for finding in partway.analysis.findings:
        assert finding.status == NOT_TESTABLE and not finding.judged
        assert finding.evidence.startswith(
            f"the plan's sweep of it is not complete: {waiting} of {len(partway.parts)} parts not yet run"
        )
        assert "the parts run so far read, for reference, not a verdict: " in finding.evidence
        assert finding.numbers["effect"] == ""  # no effect or interval shown as if it were a verdict
        assert "seed(s)" not in finding.evidence  # not for want of seeds: 4 a side would be judged
    (unlearned,) = by_grid["mul_simple_case_long"].analysis.findings  # its own ground leads, waits after
    assert unlearned.evidence.startswith("judged on the seeds that chose its budget: seeds 0, 1, 2, and the")
    assert unlearned.evidence.endswith(
        "; the plan's sweep of it is not complete: 1 of 3 parts not yet run (Core-minutes, below)"
    )
    # add_length's seeds 1-2 were ended before they ran (random-init runs cannot test a pretrained claim)
    ended = by_grid["add_length"]
    assert [run is None and bool(plan.ended_early) for plan, run in ended.parts] == [False, True]
    (pretrained,) = ended.analysis.findings
    assert pretrained.evidence.startswith("the paper's claim (tb:acc_dataformat) is about GPT-2 fine-tuned")
    assert "not yet run" not in pretrained.evidence
    text = results.section(ended)
    assert f"- **ended before it ran**: `{shlex.join(ended.parts[1][0].sweep_args())}`: " in text
    assert "**not yet run**" not in text
    replicated = by_grid["reverse_posembed_replication"]
    assert not any(plan.still_to_run(run) for plan, run in replicated.parts)
    assert all(f.judged for f in replicated.analysis.findings)

    one_family([r.analysis for r in by_grid.values()])  # the page's Holm correction: no verdict comes back
    assert not any(f.judged for f in partway.analysis.findings)
    assert all("parts not yet run" in f.evidence for f in partway.analysis.findings)
    assert unlearned.evidence == by_grid["mul_simple_case_long"].analysis.findings[0].evidence
    (replication,) = replicated.analysis.findings
    assert replication.p_holm == replication.weakest_interval.p  # a family of one claim: p unadjusted
    lead = by_claim.judged_line(
        [f for r in by_grid.values() for f in r.analysis.findings],
        [f.claim_text for r in by_grid.values() for f in r.analysis.findings],
    )
    assert lead.startswith("**Judged: 1 of the 4 claims below**: fig:randembed (")


def test_the_analysis_cli_reads_a_grids_plan_whole_with_plan_and_says_what_the_latest_leaves_out(
    tmp_path: Path, capsys
) -> None:
    """`python -m lab.report --grid G` reads G's latest sweep: for fig:acc_add_rand's sweep, run in 9 parts,
    one trial. It says so, and `--plan` reads every part the store holds as one sweep, judged as
    RESULTS.md judges it (the real archives), logging nothing on any part; with a part missing from the
    store, no verdict; a grid the plan has no part of, or --plan with --run, is refused."""
    from arith.tracking import store
    from lab.plan import ARCHIVES, plan_sweeps, restore_archives
    from lab.report import main as analysis_main

    grid = "add_posembed_recipe_24k"
    held_back = f"{grid}__cpu_recipe__seed-9__model.position=none"
    folder = tmp_path / "archives"
    folder.mkdir()
    for path in ARCHIVES.glob(f"{grid}__*.jsonl"):
        if path.stem != held_back:
            (folder / path.name).symlink_to(path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    restore_archives(uri, folder)
    capsys.readouterr()
    planned = plan_sweeps(store.client(uri), grid)
    assert (len(planned.ran), planned.waiting, planned.parts) == (8, 1, 9)

    assert analysis_main(["--grid", grid, "--tracking-uri", uri, "--plan", "--no-log"]) == 0
    out, err = capsys.readouterr()
    assert (
        f"read as one sweep: 8 of the 9 parts of '{grid}' in docs/results/plan.yaml (1 still to run)" in err
    )
    assert f"Sweeps {planned.ran[0]} and 7 more, read as one, of grid '{grid}'" in out
    assert "**not testable**" in out and "1 of 9 parts not yet run (docs/results/plan.yaml)" in out

    restore_archives(uri, ARCHIVES)  # the held-back part: the plan whole
    capsys.readouterr()
    planned = plan_sweeps(store.client(uri), grid)
    assert analysis_main(["--grid", grid, "--tracking-uri", uri]) == 0  # the latest sweep alone
    out, err = capsys.readouterr()
    assert "1 trials (1 FINISHED)" in out and "**the seeds cannot tell**" not in out
    assert f"one part of the 9 parts of '{grid}' in docs/results/plan.yaml (9 in this store)" in err
    assert "--plan reads them as one" in err
    assert analysis_main(["--grid", grid, "--tracking-uri", uri, "--plan"]) == 0
    out, err = capsys.readouterr()
    assert "17 trials (17 FINISHED)" in out and "(0 still to run)" in err
    verdict = next(line for line in out.splitlines() if "[fig:acc_add_rand]" in line)
    assert "**the seeds cannot tell**" in verdict and "-0.058 | [-0.171, +0.055]" in verdict  # RESULTS.md's
    client = store.client(uri)
    assert not any("verdicts" in client.get_run(run_id).data.tags for run_id in planned.ran[:1])
    # its MLflow UI view lists the trials read and nothing else the grid's experiment holds (a trial of a
    # superseded sweep, say)
    experiment = client.get_experiment_by_name(grid).experiment_id
    stray = client.create_run(experiment).info.run_id
    assert analysis_main(["--grid", grid, "--tracking-uri", uri, "--plan", "--ui-url", "http://ui"]) == 0
    key = capsys.readouterr().out.split("viewStateShareKey=")[1].split()[0].split("&")[0]
    assert key.startswith(f"sweep-{planned.ran[0][:12]}-and-8-more-")
    state = json.loads(client.get_experiment(experiment).tags[VIEW_TAG + key])
    shown = {r.info.run_id for r in client.search_runs([experiment], state["searchFilter"], max_results=100)}
    assert len(shown) == 17 and stray not in shown

    assert analysis_main(["--grid", "demo", "--tracking-uri", uri, "--plan"]) == 2
    assert "docs/results/plan.yaml has no part of grid 'demo'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        analysis_main(["--grid", grid, "--tracking-uri", uri, "--plan", "--run", planned.ran[0]])
    assert "give one of them" in capsys.readouterr().err


def test_the_plan_note_says_what_a_report_of_the_latest_sweep_leaves_out() -> None:
    """Without --plan the report is of the grid's latest sweep; a note says which of the plan's parts it
    is (or that it is none of them) and what is still to run, and where a search's parts are read whole.
    --plan refuses a search's parts, and with no part in the store says how to import their archives."""
    from analysis.load import AnalysisError
    from lab.plan import PlanSweeps
    from lab.report import plan_note

    assert plan_note(PlanSweeps("g", ("a",), 0, 1), "a") == ""  # the plan's one part: nothing left out
    assert plan_note(PlanSweeps("g", (), 2, 2), "x") == ""  # no part ran: a sweep by hand
    waits = plan_note(PlanSweeps("g", ("a",), 2, 3), "a")
    assert "one part of the 3 parts of 'g'" in waits and "(1 in this store, 2 still to run)" in waits
    other = plan_note(PlanSweeps("g", ("a", "b"), 0, 2), "x")
    assert "reads sweep x, none of the 2 parts" in other and "--plan reads them as one sweep" in other
    search = plan_note(PlanSweeps("s", ("a", "b"), 0, 2, search=True), "b")
    assert "`python -m lab.search --grid s` reads them as one search" in search
    with pytest.raises(AnalysisError, match="is a recipe search, read whole"):
        PlanSweeps("s", ("a",), 0, 1, search=True).to_read("sqlite:///x.db")
    with pytest.raises(AnalysisError, match=r"arith.tracking.archive import docs/results/sweeps/g__"):
        PlanSweeps("g", (), 1, 1).to_read("sqlite:///x.db")


#: a not-testable reason as analysis.findings writes it for mul_format at two digit counts (RESULTS.md)
MUL_FORMAT_WHY = (
    "max_digits=3 not testable (basic not learned: seed 2 0.00 on 2x2, the paper's 2x2 0.99 (3 of 3 seeds "
    "below 0.9 on some cell); padding_reverse not learned: seed 2 0.00 on 2x3, the paper's 2x5 1.00 (3 of 3 "
    "seeds below 0.9 on some cell)); max_digits=5 not testable (basic not learned: seed 0 0.00 on 2x2, the "
    "paper's 2x2 0.95 (1 of 1 seeds below 0.9 on some cell)); max_digits=3 gated on basic: 1x1, 1x2"
)


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def test_a_short_reason_is_cut_at_a_clause_with_its_parentheses_closed_and_says_what_it_dropped() -> None:
    """The before-and-after table's reason: the first clause outside any parenthesis; where that is too
    long, its inner clauses that fit, closed, with "…" wherever text was dropped."""
    short = cell_text.clip_reason(MUL_FORMAT_WHY)
    assert short == (
        "max_digits=3 not testable (basic not learned: seed 2 0.00 on 2x2, the paper's 2x2 0.99 (3 of 3 "
        "seeds below 0.9 on some cell); …); …"
    )
    assert len(short) <= cell_text.SHORT_WHY and _balanced(short)
    # a first clause that fits is kept whole; the clauses after it are said to be dropped
    assert (
        cell_text.clip_reason("a not learned (1 of 3 seeds); gated on a: 2x2")
        == "a not learned (1 of 3 seeds); …"
    )
    assert cell_text.clip_reason("a not learned (1 of 3; seeds)") == "a not learned (1 of 3; seeds)"
    # no clause boundary inside the limit: cut at a word, still closed
    word = cell_text.clip_reason("x (" + "long words " * 30 + ")", 60)
    assert word.endswith("…)") and len(word) <= 60 and _balanced(word)


def test_a_long_command_quoted_in_the_not_testable_table_is_cited_by_a_note_written_once() -> None:
    """A benchmark's full command line moves from every cell that quotes it to one numbered note under the
    table; the cell keeps its numbers and reason, and a short quoted name stays where it is."""
    command = "benchmarks/bench_train.py throughput --presets gpt2-small " + "--set data.x=1 " * 8
    cell = f"151 tokens/s on one core (`sweeps.cost`; `{command.strip()}`, 2026-11-29): 3,100 core-hours"
    rows = [{"grid": "nl_mix", "cost": cell, "n": 3}, {"grid": "nl_mix", "cost": cell, "n": 4}]
    cited, notes = cell_text.command_notes(rows)
    assert [r["cost"] for r in cited] == [
        "151 tokens/s on one core (`sweeps.cost`; command [1], 2026-11-29): 3,100 core-hours"
    ] * 2
    assert [r["n"] for r in cited] == [3, 4]
    assert notes == f"\nCommands the table cites:\n\n[1] `{command.strip()}`\n"
    assert cell_text.command_notes([{"cost": "`sweeps.cost`"}]) == ([{"cost": "`sweeps.cost`"}], "")
