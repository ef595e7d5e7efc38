"""The record of a trial is named once: no module but `arith.tracking.schema` spells a tag name, a metric,
an artifact's path, a column of the trial record's frames (cells, errors, the run id joining them) or a
schema constant (its string literals are found with `ast`), and the paper table tag is joined and split by
the schema's pair of functions alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arith.tracking import schema

ROOT = Path(__file__).resolve().parents[1]
TOP = ("arith", "experiments", "sweeps", "analysis", "lab", "scripts", "benchmarks")
SCHEMA = "arith/tracking/schema.py"

#: the operands' columns of eval/errors.csv: single letters, and the model artifact's name (the config's
#: section too): too common to find by their spelling (the modules indexing the errors frame use
#: schema.A_COLUMN / B_COLUMN); every other column is guarded
TOO_COMMON = {schema.A_COLUMN, schema.B_COLUMN, schema.MODEL_ARTIFACT}
GUARDED: set[str] = {
    *(
        v
        for k, v in vars(schema).items()
        if k.endswith(("_TAG", "_METRIC", "_ARTIFACT")) and isinstance(v, str)
    ),
    *schema.CELL_COLUMNS,
    *schema.ERROR_COLUMNS,
    schema.RUN_ID_COLUMN,
    schema.EPOCH_COLUMN,
    schema.FINAL_EPOCH_COLUMN,
} - TOO_COMMON

#: (module, literal) pairs that are not the schema, and why
NOT_THE_SCHEMA: dict[tuple[str, str], str] = {
    ("arith/data/datasets.py", "seed"): "DataConfig's field, not the trial's seed tag",
    ("sweeps/timing.py", "seed"): "DataConfig's field in a cache key",
    ("benchmarks/bench_train.py", "seed"): "a field of the benchmark's own JSON rows",
    ("benchmarks/bench_against.py", "seed"): "a field of bench_train.py's JSON rows, which it compares",
    **{
        (module, "run_id"): "a field of the archive / outbox JSON record (its own file format)"
        for module in (
            "arith/tracking/archive.py",
            "arith/tracking/archive_checks.py",
            "arith/tracking/archive_compare.py",
            "sweeps/offline_archive.py",
            "arith/tracking/outbox.py",
            "arith/tracking/recorder.py",
        )
    },
    ("arith/training/cli.py", "run_id"): "a field of the trainer's printed JSON summary",
    # "epoch" as the trainer's reported metric (Tune's result key, an MLflow metric), not the cells column
    ("arith/training/train.py", "epoch"): "the trainer's reported metric (Tune result / MLflow metric)",
    ("sweeps/end_table.py", "epoch"): "a Tune result key in the end-of-sweep summary's metrics",
    ("lab/search/sweep.py", "epoch"): "a column of Tune's result history (the trainer's reported metric)",
    ("lab/search/costs.py", "epoch"): "a column of the search's own evaluations frame (an MLflow step)",
    # "grid" and "scale" as anything but the MLflow tags: each module owning that format spells it
    ("lab/plan.py", "grid"): "a field of plan.yaml's parts (lab.plan owns plan.yaml)",
    ("lab/plan.py", "scale"): "a field of plan.yaml's parts (lab.plan owns plan.yaml)",
    ("lab/gpu_plan.py", "grid"): "a field of gpu_plan.yaml's parts (lab.gpu_plan owns it)",
    ("lab/gpu_plan.py", "scale"): "a field of gpu_plan.yaml's parts (lab.gpu_plan owns it)",
    ("sweeps/storage.py", "grid"): "a key of sweep.json (its --resume record), not the parent run's tag",
    ("sweeps/storage.py", "scale"): "a key of sweep.json (its --resume record), not the parent run's tag",
    (
        "lab/budget.py",
        "grid",
    ): "a field of the pre-search JSON-lines records and the budget table's column",
    ("lab/budget.py", "scale"): "a field of the pre-search JSON-lines records",
    ("lab/spend.py", "grid"): "a column header of the plan's spend table (docs/RESULTS.md)",
    ("lab/spend.py", "scale"): "a column header of the plan's spend table (docs/RESULTS.md)",
    ("analysis/findings.py", "grid"): "a column of the findings table (FINDING_COLUMNS)",
    ("lab/results/page.py", "grid"): "a field of notes.yaml's verdicts before (the report's own prose)",
    ("lab/results/untestable.py", "grid"): "a column of the not-testable table and of lab.budget's table",
    ("analysis/tables.py", "grid"): "a task's table layout (Task.layout), not the tag",
    ("arith/data/tasks/mul.py", "grid"): "the task's table layout (Task.layout), not the tag",
    ("sweeps/cost.py", "grid"): "a column of the GPU cost estimate's table",
    ("scripts/cluster/throughput.py", "grid"): "a field of the throughput script's own JSON rows",
    ("benchmarks/bench_paper.py", "grid"): "a field of the benchmark's own JSON rows",
    ("benchmarks/paper_rows.py", "grid"): "a field of the benchmark's own JSON rows",
}

#: the distinctive fields of a plan file, each spelled by the one module that reads that file alone
PLAN_FIELDS: dict[str, str] = {
    "why_not_run": "lab/plan.py",
    "estimate_core_min": "lab/plan.py",
    "chosen_by": "lab/gpu_plan.py",
    "procs": "lab/gpu_plan.py",
}


def _sources() -> dict[str, ast.AST]:
    paths = (p for top in TOP for p in sorted((ROOT / top).rglob("*.py")))
    return {p.relative_to(ROOT).as_posix(): ast.parse(p.read_text()) for p in paths}


def schema_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, value) of each string literal naming a guarded tag or column: in code and inside an
    f-string's expressions, not an f-string's own text."""
    text = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in GUARDED
        and id(node) not in text
    ]


def test_no_module_but_the_schema_spells_a_tag_name_or_a_record_column() -> None:
    found = [
        f"{module}:{line}: {value!r}"
        for module, tree in _sources().items()
        if module != SCHEMA
        for line, value in schema_literals(tree)
        if (module, value) not in NOT_THE_SCHEMA
    ]
    assert not found, "use the arith.tracking.schema constant:\n" + "\n".join(sorted(found))


def test_the_allowlist_names_only_literals_still_there() -> None:
    present = {(m, v) for m, tree in _sources().items() for _, v in schema_literals(tree)}
    assert not set(NOT_THE_SCHEMA) - present, "drop these allowlist entries"


def test_no_module_but_its_reader_spells_a_plan_files_field() -> None:
    found = [
        f"{module}:{node.lineno}: {node.value!r}"
        for module, tree in _sources().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in PLAN_FIELDS
        and PLAN_FIELDS[node.value] != module
    ]
    assert not found, "read the plan through lab.plan / lab.gpu_plan:\n" + "\n".join(found)


def test_the_guard_covers_the_tags_the_epoch_and_the_errors_columns() -> None:
    names = {"sweep", "grid", "scale", "git_commit", "epoch", "final_epoch", "prompt", "expected", "reply"}
    names |= {"test_acc", "test_acc/beyond", "train/loss", "eval/cells.csv", "eval/errors.csv"}
    assert names <= GUARDED
    assert not TOO_COMMON & GUARDED


def test_the_guard_finds_a_literal_in_code_and_in_f_string_expressions_not_in_f_string_text() -> None:
    tree = ast.parse("cells['row_digits']\nf\"{row['seed']} seed\"\nf'point {x}'\n")
    assert sorted(schema_literals(tree)) == [(1, "row_digits"), (2, "seed")]


def test_no_schema_constant_is_defined_outside_the_schema() -> None:
    names = {k for k in vars(schema) if k.isupper()}
    defined = [
        f"{module}:{node.lineno}: {target.id}"
        for module, tree in _sources().items()
        if module != SCHEMA
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for target in (target.elts if isinstance(target, ast.Tuple) else [target])
        if isinstance(target, ast.Name) and target.id in names
    ]
    assert not defined, "\n".join(defined)


@pytest.mark.parametrize(
    ("labels", "tag"),
    [
        (("tb:basic-5",), "tb:basic-5"),
        (("tb:basic-5", "tb:padding-5"), "tb:basic-5,tb:padding-5"),
        ((), "none"),
    ],
)
def test_paper_labels_round_trip_through_the_stored_tag(labels: tuple[str, ...], tag: str) -> None:
    assert schema.paper_table_tag(labels) == tag
    assert schema.paper_labels(tag) == labels


def test_a_trial_without_the_paper_table_tag_reads_as_unknown_not_as_none() -> None:
    assert schema.paper_labels("") is None
    assert schema.paper_labels(" tb:a , tb:b ") == ("tb:a", "tb:b")


def _comma_calls(statement: ast.stmt) -> list[ast.Call]:
    """The `x.split(",")` and `",".join(x)` calls of a statement."""
    return [
        node
        for node in ast.walk(statement)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and (
            (
                node.func.attr == "split"
                and any(isinstance(a, ast.Constant) and a.value == "," for a in node.args)
            )
            or (
                node.func.attr == "join"
                and isinstance(node.func.value, ast.Constant)
                and node.func.value.value == ","
            )
        )
    ]


def test_no_module_but_the_schema_splits_or_joins_the_paper_table_tag() -> None:
    """`paper_labels` / `paper_table_tag` alone read and write the tag's format: no other statement that
    names the paper table tag splits or joins on commas."""
    simple = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Expr)
    found = [
        f"{module}:{statement.lineno}"
        for module, tree in _sources().items()
        if module != SCHEMA
        for statement in ast.walk(tree)
        if isinstance(statement, simple)
        and ("PAPER_TABLE_TAG" in ast.unparse(statement) or "paper_table" in ast.unparse(statement))
        and _comma_calls(statement)
    ]
    assert not found, (
        "read the tag with schema.paper_labels, write it with schema.paper_table_tag:\n" + "\n".join(found)
    )
