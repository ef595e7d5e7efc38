"""The dialogue generator: counts and digit mix of appendix C, its noise rates, variety, and loading."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from arith.config import ConfigError, DataConfig
from arith.data import datasets as data
from arith.data.dialogue import (
    BROKEN_RATE,
    SEPARATORS,
    WRONG_RATE,
    dialogue_example,
    generate_dialogues,
    load_dialogues,
    space_digits,
)
from arith.data.sampling import generator
from arith.data.tasks import answer_key

SPACED_NUMBER = re.compile(r"\d(?: \d)*")


@pytest.fixture(scope="module")
def paper_dialogues():
    """The paper's counts: 12,200 dialogues on 2-3-digit sums and 1,040 on 4-5-digit sums."""
    return generate_dialogues(generator(0, "dialogue"), 12_200, 1_040)


def is_broken(e) -> bool:
    return "\n" in e.text


def test_counts_and_digit_mix(paper_dialogues):
    assert len(paper_dialogues) == 13_240
    digits = [len(str(x)) for e in paper_dialogues for x in (e.a, e.b)]
    share = {d: n / len(digits) for d, n in Counter(digits).items()}
    total = 2 * 13_240
    # easy: P(2 digits) = 0.3, P(3) = 0.7; hard: 4 and 5 digits 0.5 each (appendix C)
    assert share[2] == pytest.approx(0.3 * 2 * 12_200 / total, abs=0.01)
    assert share[3] == pytest.approx(0.7 * 2 * 12_200 / total, abs=0.01)
    assert share[4] == pytest.approx(0.5 * 2 * 1_040 / total, abs=0.005)
    assert share[5] == pytest.approx(0.5 * 2 * 1_040 / total, abs=0.005)
    hard = [e for e in paper_dialogues if len(str(e.a)) >= 4]
    assert all(len(str(e.b)) >= 4 for e in hard) and len(hard) == 1_040


def test_noise_rates(paper_dialogues):
    broken = [e for e in paper_dialogues if is_broken(e)]
    assert len(broken) / len(paper_dialogues) == pytest.approx(BROKEN_RATE, abs=0.001)
    two_lines = [e for e in broken if e.prompt.endswith("\n")]
    separated = [e for e in broken if e.answer.rsplit("\n", 1)[-1] in SEPARATORS]
    assert len(two_lines) + len(separated) == len(broken) and abs(len(two_lines) - len(separated)) <= 1
    wrong = [e for e in paper_dialogues if int(e.key) != e.a + e.b]
    assert all(len(str(e.a)) >= 4 for e in wrong)  # only among the 4-5-digit dialogues
    assert len(wrong) == round(WRONG_RATE * 1_040) == 2


def test_every_dialogue_is_one_student_turn_and_one_teacher_reply(paper_dialogues):
    for e in paper_dialogues:
        assert e.prompt.startswith("Student: ") and e.answer.startswith(" Teacher: ")
        assert "Teacher:" not in e.prompt and "Student:" not in e.answer
        # numbers are written with a space before each digit; the sum is the last number of the reply
        assert SPACED_NUMBER.findall(e.prompt)[:2] == [" ".join(str(e.a)), " ".join(str(e.b))]
        assert answer_key("dialogue", "basic", e.answer) == e.key
        assert re.search(r"\d\d", e.text) is None


def test_variety(paper_dialogues):
    students = {SPACED_NUMBER.sub("#", e.prompt.strip()) for e in paper_dialogues}
    teachers = {SPACED_NUMBER.sub("#", e.answer.split("\n")[0]) for e in paper_dialogues}
    assert len(students) > 300 and len(teachers) > 1000
    assert any(e.prompt.startswith("Student: Hi, what is the sum of") for e in paper_dialogues)


def test_noise_can_be_turned_off():
    clean = generate_dialogues(generator(0, "dialogue"), 500, 500, broken_rate=0, wrong_rate=0)
    assert not any(is_broken(e) for e in clean) and all(int(e.key) == e.a + e.b for e in clean)


def test_train_mixes_arithmetic_lines():
    cfg = DataConfig(task="dialogue", format="basic", dialogue_easy=300, dialogue_hard=30)
    alone = data.train_examples(cfg)
    assert Counter(e.kind for e in alone) == {"dialogue": 330}
    mixed = data.train_examples(
        DataConfig(**{**vars(cfg), "mix_format": "random_space", "mix_samples": 2000})
    )
    kinds = Counter(e.kind for e in mixed)
    assert kinds == {"dialogue": 330, "mix": 2000}
    lines = [e for e in mixed if e.kind == "mix"]
    assert all(e.task == "add" and e.format == "random_space" for e in lines)
    assert {len(str(e.a)) for e in lines} == {1, 2, 3, 4, 5}  # operand digits uniform on 1..5
    assert [e.kind for e in mixed[:50]].count("dialogue") < 50  # shuffled together


@pytest.mark.parametrize("mix", ["none", "basic", "random_space"])
def test_test_contexts(mix):
    cfg = DataConfig(task="dialogue", format="basic", mix_format=mix, test_per_cell=10)
    examples = data.test_examples(cfg)
    cells = Counter(e.cell for e in examples)
    assert cells == {(ctx, None, n): 10 for ctx in ("dialogue", "pure_addition") for n in (2, 3, 4, 5)}
    for e in examples:
        assert len(str(e.a)) == len(str(e.b)) == e.cell[2]
        if e.cell[0] == "dialogue":
            assert (
                e.prompt == f"Student: Hi, what is the sum of {' '.join(str(e.a))} and {' '.join(str(e.b))}?"
            )
            assert (e.task, e.key) == ("dialogue", str(e.a + e.b))
        else:
            assert (e.task, e.format) == ("add", "basic" if mix == "none" else mix)
            assert answer_key(e.task, e.format, e.answer) == e.key == str(e.a + e.b)


# --- a user's own dialogue file ---------------------------------------------------------------------------

TAB_NLARITH_DIALOGUES = [
    # tab:nlarith_example writes the numbers unspaced; the loader spaces them like all the paper's data
    "Student: Excuse me, can you help me with something? I need to add two numbers, 842 and 62. "
    "Teacher: Of course, let me do the calculation for you. The answer is 904.",
    "Student: Good morning! Can you help me with a math problem? I need to find the sum of 324 and 402. "
    "Teacher: Good morning! Sure thing. The answer is 726.",
]


@pytest.mark.parametrize("suffix", [".jsonl", ".txt"])
def test_load_dialogue_file(tmp_path, suffix):
    path = tmp_path / f"dialogues{suffix}"
    if suffix == ".jsonl":
        path.write_text(
            "".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(TAB_NLARITH_DIALOGUES))
        )
    else:
        path.write_text("\n".join(TAB_NLARITH_DIALOGUES) + "\n\n---\n")
    examples = load_dialogues(path)
    first = examples[0]
    assert first.prompt == (
        "Student: Excuse me, can you help me with something? I need to add two numbers, 8 4 2 and 6 2."
    )
    assert first.answer == " Teacher: Of course, let me do the calculation for you. The answer is 9 0 4."
    assert (first.a, first.b, first.key) == (842, 62, "904")
    assert (examples[1].a, examples[1].b, examples[1].key) == (324, 402, "726")
    if suffix == ".txt":
        assert (examples[2].prompt, examples[2].answer, examples[2].key) == ("---", "", "")
    cfg = DataConfig(task="dialogue", format="basic", dialogue_file=str(path))
    assert data.train_examples(cfg) == examples


def test_bad_dialogue_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="holds no dialogues"):
        load_dialogues(empty)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"dialogue": "x"}\n')
    with pytest.raises(ValueError, match="'text' field"):
        load_dialogues(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        data.train_examples(
            DataConfig(task="dialogue", format="basic", dialogue_file=str(tmp_path / "none.txt"))
        )


def test_space_digits():
    assert space_digits("add 842 and 62.") == "add 8 4 2 and 6 2."
    assert space_digits("add 8 4 2") == "add 8 4 2"
    assert space_digits("42 is $5") == "4 2 is $ 5"
    e = dialogue_example("Student: hello there")
    assert (e.a, e.b, e.answer, e.key) == (0, None, "", "")


def test_generated_dialogues_are_deterministic():
    a = generate_dialogues(generator(3, "dialogue"), 50, 50)
    b = generate_dialogues(generator(3, "dialogue"), 50, 50)
    c = generate_dialogues(np.random.Generator(np.random.PCG64(4)), 50, 50)
    assert a == b and a != c
