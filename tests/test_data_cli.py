"""`python -m arith.data dump|preview`: JSONL with the documented fields; bad input writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arith.data.__main__ import main
from arith.data.datasets import generate

ROOT = Path(__file__).resolve().parents[1]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_dump_as_a_module(tmp_path):
    out = tmp_path / "mul.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "arith.data",
        "dump",
        "--task",
        "mul",
        "--format",
        "padding_reverse",
    ]
    cmd += ["--max-digits", "5", "--augment", "first_step", "--count", "30", "--seed", "3", "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = read_jsonl(out)
    assert len(rows) == 30
    for i, row in enumerate(rows):
        assert {"task", "format", "a", "b", "prompt", "answer", "text"} <= set(row)
        assert (row["task"], row["format"]) == ("mul", "padding_reverse")
        assert isinstance(row["a"], int) and isinstance(row["b"], int)
        assert row["text"] == row["prompt"] + row["answer"]
        assert row["kind"] == ("first_step" if i % 3 == 0 else "main")
        product = row["a"] * (row["b"] % 10 if i % 3 == 0 else row["b"])
        assert row["key"] == str(product).zfill(10)[::-1]
    # the same seed gives the same file
    assert [r["text"] for r in rows] == [
        e.text
        for e in generate("mul", "padding_reverse", count=30, seed=3, max_digits=5, augment="first_step")
    ]


@pytest.mark.parametrize(
    ("args", "task", "b_is_null"),
    [
        (["--task", "reverse", "--count", "5"], "reverse", True),
        (["--task", "add", "--format", "random_space", "--count", "5"], "add", False),
        (
            [
                "--task",
                "add_scratchpad",
                "--format",
                "recursive_scratchpad",
                "--reverse-addends",
                "--count",
                "5",
            ],
            "add_scratchpad",
            False,
        ),
        (["--task", "dialogue", "--count", "20", "--mix-format", "basic", "--mix-samples", "5"], None, False),
        (["--task", "mul", "--split", "test", "--count", "2", "--max-digits", "3"], "mul", False),
    ],
)
def test_dump_every_task(tmp_path, args, task, b_is_null):
    out = tmp_path / "d.jsonl"
    assert main(["dump", *args, "--out", str(out)]) == 0
    rows = read_jsonl(out)
    assert rows and all(r["text"] == r["prompt"] + r["answer"] for r in rows)
    if task:
        assert {r["task"] for r in rows} == {task}
    assert all((r["b"] is None) == b_is_null for r in rows)


def test_dump_counts():
    assert len(generate("dialogue", "basic", count=20)) == 20
    assert len(generate("mul", "basic", split="test", count=2, max_digits=3)) == 2 * 9
    assert len(generate("reverse", "basic", count=7)) == 7


BAD = [
    (["--task", "mull"], "choose one of: mul, add_scratchpad, reverse, add, dialogue"),
    (
        ["--task", "mul", "--format", "padded"],
        "choose one of: basic, reverse_product, padding, padding_reverse",
    ),
    (["--task", "mul", "--augment", "twice"], "choose one of: none, n_times_1, first_step"),
    (["--task", "mul", "--max-digits", "0"], "1 <= min_digits <= max_digits"),
    (["--task", "mul", "--one-digit-weight", "-1"], "one_digit_weight must be >= 0"),
    (["--task", "mul", "--count", "0"], "count must be >= 1"),
    (
        [
            "--task",
            "mul",
            "--format",
            "padding",
            "--max-digits",
            "3",
            "--split",
            "test",
            "--test-digits",
            "4",
        ],
        "must not exceed",
    ),
    (["--task", "add", "--augment", "n_times_1"], "applies to task 'mul' only"),
    (["--task", "add", "--split", "dev"], "choose one of: train, test"),
    (["--task", "dialogue", "--mix-format", "fancy"], "choose one of: none, basic, random_space"),
    (["--task", "dialogue", "--dialogue-file", "/no/such/file.jsonl"], "does not exist"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_writes_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "out.jsonl"
    assert main(["dump", *args, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_bad_input_leaves_an_existing_file_alone(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n")
    assert main(["dump", "--task", "mul", "--count", "-5", "--out", str(out)]) == 2
    assert out.read_text() == "keep me\n"


def test_unknown_option_is_refused(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["dump", "--task", "mul", "--colour", "red", "--out", str(tmp_path / "x.jsonl")])
    assert exit_info.value.code == 2 and not (tmp_path / "x.jsonl").exists()


def test_preview_prints_a_few_lines(capsys):
    assert (
        main(["preview", "--task", "add_scratchpad", "--format", "basic", "--count", "50", "--lines", "3"])
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("50 examples") and len(out) == 4
    assert all(":|" in line and "[key " in line for line in out[1:])
