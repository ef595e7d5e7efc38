"""The record's judgement of a grid run in parts: the findings lead counts a claim judged in two grids once,
a grid with parts waiting is not judged yet, python -m lab.report reads a grid's plan whole, and the not-
testable table's reasons and commands are cut and cited."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from analysis import cell_text
from analysis.ui_view import VIEW_TAG
from lab import analysis_claims as by_claim
from lab.plan import repo_relative
from lab.results import page as results


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
    from analysis.findings import NOT_TESTABLE
    from lab.analysis_claims import one_family
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


def test_a_pages_commands_name_no_machines_folders() -> None:
    """A store under a runs/ folder reads relative to the repository; one elsewhere names one machine, and
    its flag is left out."""
    ran_here = "python -m lab.sweep --grid g --tracking-uri sqlite:////x/y/runs/cpu/mlflow.db --seeds 5"
    assert (
        repo_relative(ran_here)
        == "python -m lab.sweep --grid g --tracking-uri sqlite:///runs/cpu/mlflow.db --seeds 5"
    )
    elsewhere = (
        "python -m lab.sweep --grid g --tracking-uri sqlite:////w/s/mlflow.db --storage-path /w/s/r --seeds 5"
    )
    assert repo_relative(elsewhere) == "python -m lab.sweep --grid g --seeds 5"
