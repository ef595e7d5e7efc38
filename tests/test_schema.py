"""The record of a trial is named once: no module but `arith.tracking.schema` spells a tag name, a column
of the trial record's frames (cells, errors, the run id joining them) or a schema constant (its string
literals are found with `ast`), and the paper table tag is joined and split by the schema's pair of
functions alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arith.tracking import schema

ROOT = Path(__file__).resolve().parents[1]
TOP = ("arith", "experiments", "sweeps", "analysis", "scripts", "benchmarks")
SCHEMA = "arith/tracking/schema.py"

#: "grid" and "scale" also name a plan part's fields, a finding's column and a task's layout: too common
#: a word to find as the tag by its spelling; every other tag name is guarded
UNGUARDED_TAGS = {schema.GRID_TAG, schema.SCALE_TAG}
GUARDED: set[str] = {
    *(v for k, v in vars(schema).items() if k.endswith("_TAG") and isinstance(v, str)),
    *schema.CELL_COLUMNS,
    schema.RUN_ID_COLUMN,
} - UNGUARDED_TAGS

#: (module, literal) pairs that are not the schema, and why
NOT_THE_SCHEMA: dict[tuple[str, str], str] = {
    ("arith/data/datasets.py", "seed"): "DataConfig's field, not the trial's seed tag",
    ("sweeps/timing.py", "seed"): "DataConfig's field in a cache key",
    ("benchmarks/bench_train.py", "seed"): "a field of the benchmark's own JSON rows",
    **{
        (module, "run_id"): "a field of the archive / outbox JSON record (its own file format)"
        for module in (
            "arith/tracking/archive.py",
            "arith/tracking/archive_checks.py",
            "arith/tracking/outbox.py",
            "arith/tracking/recorder.py",
            "arith/tracking/backfill.py",
        )
    },
    ("arith/training/cli.py", "run_id"): "a field of the trainer's printed JSON summary",
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
