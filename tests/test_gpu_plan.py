"""The plans, each read once: docs/results/gpu_plan.yaml by `lab.gpu_plan` (typed, checked, read alike
by `lab.bank` and `analysis`) and docs/results/plan.yaml by `lab.plan`; a malformed plan is refused
with one line naming the field, and no other module reads either file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from arith.config import ConfigError
from lab.gpu_plan import GPU_PLAN, MAX_PARTS, PlannedBatch, PlannedPart, load_gpu_plan
from lab.plan import load_plan

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("arith", "experiments", "sweeps", "analysis", "lab", "scripts", "benchmarks")

#: a plan of two batches: a pre-search, then a batch whose budget it chose
GOOD = [
    {
        "batch": "a",
        "what": "a pre-search,\n  two seeds",
        "minutes": 8,
        "procs": 4,
        "parts": [
            {"grid": "mul_format", "seeds": [100, 101], "presearch": True, "only": {"data.max_digits": 5}},
        ],
    },
    {
        "batch": "b",
        "minutes": 7.5,
        "procs": 2,
        "chosen_by": "a",
        "parts": [
            {"grid": "demo", "scale": "smoke", "seeds": 2, "set": {"train.max_steps": 10}, "label": "d"}
        ],
    },
    {"batch": "c", "minutes": 5, "procs": 2},  # its parts wait on b's results
]


def _write(tmp_path: Path, plan: object) -> Path:
    path = tmp_path / "gpu_plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def test_a_plan_reads_as_typed_batches_with_the_seeds_that_chose_each_budget(tmp_path: Path) -> None:
    a, b, c = load_gpu_plan(_write(tmp_path, GOOD))
    assert a == PlannedBatch(
        "a",
        "a pre-search, two seeds",
        8.0,
        4,
        (PlannedPart("mul_format", (100, 101), only={"data.max_digits": "5"}, presearch=True,
                     presearch_seeds=(100, 101)),),
    )  # fmt: skip
    (part,) = b.parts
    assert (part.scale, part.seeds, part.seed_values, part.sets) == (
        "smoke",
        2,
        (0, 1),
        {"train.max_steps": "10"},
    )
    assert part.presearch_seeds == (100, 101) and b.chosen_by == "a"  # chosen by a's pre-search
    assert c.parts == () and c.what == ""
    with pytest.raises(AttributeError):
        a.procs = 1  # type: ignore[misc]  (frozen)


def test_the_committed_plan_loads() -> None:
    batches = load_gpu_plan()
    assert batches and all(isinstance(b, PlannedBatch) and len(b.parts) <= MAX_PARTS for b in batches)
    assert len({b.name for b in batches}) == len(batches)


def _broken(index: int, /, **change: object) -> list[dict]:
    plan = [dict(entry) for entry in GOOD]
    for key, value in change.items():
        if value is None:
            plan[index].pop(key)
        else:
            plan[index][key] = value
    return plan


@pytest.mark.parametrize(
    ("plan", "says"),
    [
        (_broken(0, procs=None), "batch 1 (a): missing field procs"),
        (_broken(1, batch=None), "batch 2: missing field batch"),
        (_broken(0, proc=3), "batch 1 (a): unknown field proc; known: batch, minutes, procs"),
        (_broken(1, minutes="soon"), "batch 2 (b): minutes must be a number, not 'soon'"),
        (_broken(1, procs=2.5), "batch 2 (b): procs must be a whole number, not 2.5"),
        (_broken(1, chosen_by="z"), "batch 2 (b): chosen_by='z' names no earlier batch"),
        (_broken(0, chosen_by="b"), "batch 1 (a): chosen_by='b' names no earlier batch"),
        (_broken(2, parts=[{"grid": "demo", "seeds": 1}] * 7), "batch 3 (c): parts has 7 parts"),
        (_broken(2, parts=[{"grid": "demo"}]), "batch 3 (c), part 1: missing field seeds"),
        (_broken(2, parts=[{"grid": "demo", "seeds": 1, "sets": {}}]), "part 1: unknown field sets"),
        (_broken(2, parts=[{"grid": "demo", "seeds": "0,1"}]), "part 1: seeds must be a count or a list"),
        (_broken(2, parts=[{"grid": "demo", "seeds": 1, "only": ["x=1"]}]), "part 1: only must map settings"),
        ({"batch": "a"}, "the plan is a list of batches"),
    ],
)
def test_a_malformed_plan_is_refused_in_one_line_naming_the_field(tmp_path: Path, plan, says) -> None:
    path = _write(tmp_path, plan)
    with pytest.raises(ConfigError) as raised:
        load_gpu_plan(path)
    message = str(raised.value)
    assert len(message.splitlines()) == 1 and message.startswith(str(path)) and says in message, message


def test_a_malformed_cpu_plan_is_refused_in_one_line_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("- {grid: g, seeds: 1}\n- {grid: h, estimate_core_mins: 20}\n")
    with pytest.raises(ConfigError, match=r"part 2 \(h\): unknown field estimate_core_mins; known: grid"):
        load_plan(path)
    path.write_text("- {seeds: 1}\n")
    with pytest.raises(ConfigError, match="part 1: missing field grid"):
        load_plan(path)


def _string_constants(path: Path) -> set[str]:
    """The strings a module's code holds, less its docstrings (which may name a file to say what it is)."""
    tree = ast.parse(path.read_text())
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    }


@pytest.mark.parametrize(
    ("file", "reader"),
    [("gpu_plan.yaml", "lab/gpu_plan.py"), ("plan.yaml", "lab/plan.py")],
)
def test_each_plan_file_is_named_in_code_by_its_reader_only(file: str, reader: str) -> None:
    naming = sorted(
        str(p.relative_to(ROOT))
        for top in PACKAGES
        for p in (ROOT / top).rglob("*.py")
        if any(s == file or s.endswith("/" + file) for s in _string_constants(p))
    )
    assert naming == [reader]


def test_the_plan_path_is_the_committed_file() -> None:
    assert GPU_PLAN == ROOT / "docs" / "results" / "gpu_plan.yaml" and GPU_PLAN.exists()
