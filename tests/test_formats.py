"""Every example line of the paper's format tables, rendered exactly; every answer arithmetically right."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arith.config import ConfigError
from arith.data.examples import Example
from arith.data.sampling import mul_lines
from arith.data.tasks import (
    TASK_FORMATS,
    answer_key,
    answer_number,
    lsd_first,
    problem_id,
    render_example,
    render_line,
    render_parts,
)


def latex_line(s: str) -> str:
    """A table cell of the .tex source as plain text: ``\\#`` -> ``#``, ``\\%`` -> ``%``."""
    return s.replace("\\#", "#").replace("\\%", "%").strip()


# --- tab:dataformat_mul ----------------------------------------------------------------------------------

TAB_DATAFORMAT_MUL = {
    "basic": r"7 3 8 6 6 * 1 0 0 1 \# 7 3 9 3 9 8 6 6",
    "reverse_product": r"7 3 8 6 6 * 1 0 0 1 \# 6 6 8 9 3 9 3 7",
    "padding": r"7 3 8 6 6 * 0 1 0 0 1 \# 0 0 7 3 9 3 9 8 6 6",
    "padding_reverse": r"7 3 8 6 6 * 0 1 0 0 1 \# 6 6 8 9 3 9 3 7 0 0",
}


@pytest.mark.parametrize("fmt", TAB_DATAFORMAT_MUL)
def test_tab_dataformat_mul(fmt):
    assert render_line("mul", fmt, 73866, 1001, max_digits=5) == latex_line(TAB_DATAFORMAT_MUL[fmt])


def test_mul_prompt_ends_at_marker_and_key_is_the_product_as_written():
    e = render_example("mul", "padding_reverse", 73866, 1001, max_digits=5)
    assert e.prompt == "7 3 8 6 6 * 0 1 0 0 1 #"
    assert e.answer == " 6 6 8 9 3 9 3 7 0 0"
    assert e.key == "6689393700"
    assert e.text == "7 3 8 6 6 * 0 1 0 0 1 # 6 6 8 9 3 9 3 7 0 0"


# --- tab:dataformat_mul_3data (reversed product, no padding) -----------------------------------------------

# The factor pairs behind both columns of the table: its n x 1 column is these with b := b % 10 at
# indices 0, 3, 6, 9, its first-step column is these with `%` at the same indices.
PAIRS_3DATA = [
    (65125, 15306),
    (514, 5969),
    (38631, 616),
    (22, 89),
    (79804, 88892),
    (19665, 970),
    (2649, 6796),
    (4350, 8815),
    (2020, 9989),
    (62274, 95),
]
TAB_N_TIMES_1 = r"""6 5 1 2 5 * 6 \# 0 5 7 0 9 3
5 1 4 * 5 9 6 9 \# 6 6 0 8 6 0 3
3 8 6 3 1 * 6 1 6 \# 6 9 6 6 9 7 3 2
2 2 * 9 \# 8 9 1
7 9 8 0 4 * 8 8 8 9 2 \# 8 6 1 7 3 9 3 9 0 7
1 9 6 6 5 * 9 7 0 \# 0 5 0 5 7 0 9 1
2 6 4 9 * 6 \# 4 9 8 5 1
4 3 5 0 * 8 8 1 5 \# 0 5 2 5 4 3 8 3
2 0 2 0 * 9 9 8 9 \# 0 8 7 7 7 1 0 2
6 2 2 7 4 * 5 \# 0 7 3 1 1 3"""
TAB_FIRST_STEP = r"""6 5 1 2 5 * 1 5 3 0 6 \% 0 5 7 0 9 3
5 1 4 * 5 9 6 9 \# 6 6 0 8 6 0 3
3 8 6 3 1 * 6 1 6 \# 6 9 6 6 9 7 3 2
2 2 * 8 9 \% 8 9 1
7 9 8 0 4 * 8 8 8 9 2 \# 8 6 1 7 3 9 3 9 0 7
1 9 6 6 5 * 9 7 0 \# 0 5 0 5 7 0 9 1
2 6 4 9 * 6 7 9 6 \% 4 9 8 5 1
4 3 5 0 * 8 8 1 5 \# 0 5 2 5 4 3 8 3
2 0 2 0 * 9 9 8 9 \# 0 8 7 7 7 1 0 2
6 2 2 7 4 * 9 5 \% 0 7 3 1 1 3"""


@pytest.mark.parametrize(("augment", "table"), [("n_times_1", TAB_N_TIMES_1), ("first_step", TAB_FIRST_STEP)])
def test_tab_dataformat_mul_3data(augment, table):
    # The main text says first-step lines "change the operation from * to %"; the table writes
    # `a * b % a·(b mod 10)` with the product reversed. The table is the data.
    a_list, b_list = zip(*PAIRS_3DATA, strict=True)
    lines = mul_lines(list(a_list), list(b_list), "reverse_product", augment, max_digits=5)
    assert [e.text for e in lines] == [latex_line(x) for x in table.splitlines()]
    assert [e.kind != "main" for e in lines] == [i % 3 == 0 for i in range(10)]


def test_first_step_with_padding_uses_the_formats_product_style():
    assert (
        render_line("mul", "padding_reverse", 22, 89, max_digits=3, first_step=True)
        == "0 2 2 * 0 8 9 % 8 9 1 0 0 0"
    )
    assert (
        render_line("mul", "padding", 22, 89, max_digits=3, first_step=True) == "0 2 2 * 0 8 9 % 0 0 0 1 9 8"
    )


# --- tab:dataformat (addition with a scratchpad, 239 + 821) ------------------------------------------------

# The .tex writes "0 + 2 + 8  = 1 0" with two spaces, which LaTeX prints as one: the data has one.
TAB_BASIC = "2 3 9 + 8 2 1 : 0 + 9 + 1 = 1 0, 1 + 3 + 2 = 6, 0 + 2 + 8 = 1 0, 1 0 6 0"
TAB_RANDOM_SPACE = (
    r"2\;\;\;\;\;\;3 9\;\;\;+ 8\;\;\;2 1 :\;\;\;0 +\;\;\;9 + 1 = 1\;\;\;0, 1 +\;\;\;3 +\;\;2\;\;\;= 6,"
    r"\;\;\;\;0\;\;+ 2 +\;\;\;\;\;8\;\;= 1\;\;0, 1 0\;\;6 0"
)
TAB_RECURSIVE = (
    "2 3 9 + 8 2 1 : 0 + 9 + 1 = 1 0 , = 0 , 3 2 + 2 8 : 1 + 3 + 2 = 6 , = 6 0 , "
    "2 + 8 : 0 + 2 + 8 = 1 0 , = 0 6 0 , = 1 0 6 0"
)


def test_tab_dataformat_basic():
    # tab:fail's basic lines add a final-carry step and write ": sum" at the end
    # ("1 + 0 + 0 = 1, : 1 5 8 ..."); they disagree with tab:dataformat, which the data follows.
    assert render_line("add_scratchpad", "basic", 239, 821) == TAB_BASIC
    prompt, _, key = render_parts("add_scratchpad", "basic", 239, 821)
    assert (prompt, key) == ("2 3 9 + 8 2 1 :", "1060")


def test_tab_dataformat_recursive_scratchpad():
    # tab:fail's recursive example writes "1 5, = 5," (no space before commas); tab:dataformat writes
    # "1 0 , = 0 ,", which the data follows.
    assert render_line("add_scratchpad", "recursive_scratchpad", 239, 821) == TAB_RECURSIVE


def test_tab_dataformat_random_space():
    """The paper's random-space line, each run of \\; read as one extra space (LaTeX hides how many
    spaces the data had; the format inserts at most one per gap between visible characters)."""
    paper = re.sub(r"(?:\\;)+", "\x00", TAB_RANDOM_SPACE)  # \x00 marks a gap with an extra space
    # without its extra spaces, the paper's line is the basic line
    assert " ".join(paper.replace("\x00", " ").split()) == TAB_BASIC
    paper_gaps = re.split(r"[^ \x00]", paper)[1:-1]  # the text between consecutive visible characters
    basic_gaps = re.split(r"[^ ]", TAB_BASIC)[1:-1]
    assert len(paper_gaps) == len(basic_gaps)
    spaces = ["\x00" in gap for gap in paper_gaps]
    assert all(p == b for p, b, extra in zip(paper_gaps, basic_gaps, spaces, strict=True) if not extra)
    expected = "".join(
        ch + gap + (" " if extra else "")
        for ch, gap, extra in zip(
            TAB_BASIC.replace(" ", ""), [*basic_gaps, ""], [*spaces, False], strict=True
        )
    )
    assert render_line("add_scratchpad", "random_space", 239, 821, spaces=spaces) == expected
    prompt, answer, key = render_parts("add_scratchpad", "random_space", 239, 821, spaces=spaces)
    assert prompt.startswith("2  3 9  +") and prompt.endswith(":") and answer.startswith("  0 +  9")
    assert key == answer_key("add_scratchpad", "random_space", answer) == "1060"


def test_recursive_scratchpad_reverse_addends_matches_tab_fail():
    # tab:fail's 13-digit recursive example (addends written least-significant digit first): its
    # first twelve steps are right and must match; its last step is the model's (red) mistake.
    a, b = int("7378055590189"[::-1]), int("8781782465979"[::-1])
    line = render_line("add_scratchpad", "recursive_scratchpad", a, b, reverse_addends=True)
    assert line.startswith("7 3 7 8 0 5 5 5 9 0 1 8 9 + 8 7 8 1 7 8 2 4 6 5 9 7 9 : 0 + 7 + 8 = 1 5 , = 5 , ")
    assert "8 9 + 7 9 : 1 + 8 + 7 = 1 6 , = 6 0 6 5 9 8 3 8 0 6 1 5 , 9 + 9 : 1 + 9 + 9 = 1 9 ," in line
    assert line.endswith("= 1 9 6 0 6 5 9 8 3 8 0 6 1 5") and a + b == 19606598380615


# --- tab:nlarith_example (the arithmetic lines) -----------------------------------------------------------

TAB_NL_BASIC = {
    (48, 4): "4 8 + 4 = 5 2",
    (375, 261): "3 7 5 + 2 6 1 = 6 3 6",
    (5051, 8539): "5 0 5 1 + 8 5 3 9 = 1 3 5 9 0",
}
TAB_NL_RANDOM_SPACE = {
    (48, 4): r"4 8 \;\;\;\;4\;\;\;\;5 2",
    (375, 261): r"3 7 5\;\;\;\;2 6 1\;\;\;\;6 3 6",
    (5051, 8539): r"5 0 5 1\;\;\;8 5 3 9\;\;1 3 5 9 0",
}


@pytest.mark.parametrize(("a", "b"), TAB_NL_BASIC)
def test_tab_nlarith_basic(a, b):
    assert render_line("add", "basic", a, b) == TAB_NL_BASIC[(a, b)]


@pytest.mark.parametrize(("a", "b"), TAB_NL_RANDOM_SPACE)
def test_tab_nlarith_random_space(a, b):
    # Read with each \; as a space; a run between two numbers holds the one normal space plus the
    # 1-5 random ones (the first line's literal space before \;\;\;\; counts with the run).
    paper = TAB_NL_RANDOM_SPACE[(a, b)].replace("\\;", " ")
    runs = [len(r) for r in re.findall(r" {2,}", paper)]
    line = render_line("add", "random_space", a, b, spaces=[r - 1 for r in runs])
    assert line == paper
    assert all(1 <= r - 1 <= 5 for r in runs)


def test_add_padding_reverse():
    # Operands padded to max_digits, the sum to max_digits + 1 digits, reversed (Lee et al. 2023). The
    # brief's example "0 4 8 + 0 0 4 = 2 5 0" shows only max_digits digits of the sum; the rule (n + 1,
    # so that every carry fits) is followed.
    assert render_line("add", "padding_reverse", 48, 4, max_digits=3) == "0 4 8 + 0 0 4 = 2 5 0 0"
    assert render_line("add", "padding_reverse", 999, 999, max_digits=3) == "9 9 9 + 9 9 9 = 8 9 9 1"


def test_reverse_and_dialogue_lines():
    assert render_line("reverse", "basic", 12345) == "1 2 3 4 5 # 5 4 3 2 1"
    assert render_line("reverse", "basic", 12, digits=4) == "0 0 1 2 # 2 1 0 0"
    prompt, answer, key = render_parts("dialogue", "basic", 48, 52)
    assert prompt == "Student: Hi, what is the sum of 4 8 and 5 2?"
    assert answer == " Teacher: The answer is 1 0 0." and key == "100"


# --- properties: every rendered answer is arithmetically right ---------------------------------------------

operand = st.integers(min_value=0, max_value=10**25)


def digits_of(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


@settings(max_examples=200, deadline=None)
@given(a=operand, b=operand, fmt=st.sampled_from(TASK_FORMATS["mul"]), first_step=st.booleans())
def test_mul_answers_are_products(a, b, fmt, first_step):
    width = max(len(str(a)), len(str(b)))
    e = render_example("mul", fmt, a, b, max_digits=width, first_step=first_step)
    written = digits_of(e.answer)
    value = int(written[::-1] if fmt in ("reverse_product", "padding_reverse") else written)
    assert value == (a * (b % 10) if first_step else a * b)
    if fmt.startswith("padding"):
        assert len(written) == 2 * width
        assert digits_of(e.prompt) == str(a).zfill(width) + str(b).zfill(width)
    assert e.prompt.endswith("%" if first_step else "#")
    assert answer_key("mul", fmt, e.answer) == e.key
    assert e.text == e.prompt + e.answer and e.answer.startswith(" ") and not e.text.startswith(" ")


def _check_step(step: str, carry: int) -> int:
    c, x, y, s = re.fullmatch(r"(\d) \+ (\d) \+ (\d) = ([\d ]+)", step).groups()
    assert int(c) == carry and int(c) + int(x) + int(y) == int(s.replace(" ", ""))
    return int(s.replace(" ", "")) // 10


@settings(max_examples=200, deadline=None)
@given(a=operand, b=operand)
def test_scratchpad_basic_steps_are_right(a, b):
    e = render_example("add_scratchpad", "basic", a, b)
    *steps, final = e.answer.strip().split(", ")
    width = max(len(str(a)), len(str(b)))
    assert len(steps) == width
    carry = 0
    for i, step in enumerate(steps):
        assert step.split(" + ")[1] == str(a).zfill(width)[::-1][i]
        carry = _check_step(step, carry)
    assert int(final.replace(" ", "")) == a + b == int(e.key)
    assert answer_key("add_scratchpad", "basic", e.answer) == e.key


@settings(max_examples=200, deadline=None)
@given(a=operand, b=operand, reverse=st.booleans())
def test_recursive_scratchpad_steps_are_right(a, b, reverse):
    e = render_example("add_scratchpad", "recursive_scratchpad", a, b, reverse_addends=reverse)
    first = e.prompt.removesuffix(" :").replace(" ", "").split("+")
    assert first == ([str(a)[::-1], str(b)[::-1]] if reverse else [str(a), str(b)])
    steps = re.findall(r"(\d \+ \d \+ \d = [\d ]+?) , = ([\d ]+) ,", e.answer)
    width = max(len(str(a)), len(str(b)))
    assert len(steps) == width
    carry = 0
    for i, (step, partial) in enumerate(steps):
        carry = _check_step(step, carry)
        assert partial.replace(" ", "") == str(a + b).zfill(width + 1)[-(i + 1) :]
    assert e.answer.endswith("= " + " ".join(str(a + b)))
    assert answer_key("add_scratchpad", "recursive_scratchpad", e.answer) == str(a + b) == e.key


@settings(max_examples=200, deadline=None)
@given(a=operand, b=operand, seed=st.integers(0, 2**32 - 1), prob=st.floats(0, 0.99))
def test_random_space_keeps_the_basic_line(a, b, seed, prob):
    rng = np.random.default_rng(seed)
    e = render_example("add_scratchpad", "random_space", a, b, rng=rng, random_space_prob=prob)
    basic = render_line("add_scratchpad", "basic", a, b)
    assert e.text.replace(" ", "") == basic.replace(" ", "")
    gaps, basic_gaps = re.split(r"[^ ]", e.text)[1:-1], re.split(r"[^ ]", basic)[1:-1]
    assert all(g in (b, b + " ") for g, b in zip(gaps, basic_gaps, strict=True))  # <= 1 extra space a gap
    assert e.prompt.endswith(":") and e.answer.startswith(" ")
    assert answer_key("add_scratchpad", "random_space", e.answer) == str(a + b) == e.key


@settings(max_examples=200, deadline=None)
@given(a=operand, b=operand, fmt=st.sampled_from(TASK_FORMATS["add"]), seed=st.integers(0, 2**32 - 1))
def test_add_answers_are_sums(a, b, fmt, seed):
    width = max(len(str(a)), len(str(b)))
    e = render_example("add", fmt, a, b, max_digits=width, rng=np.random.default_rng(seed))
    written = digits_of(e.answer)
    assert int(written[::-1] if lsd_first("add", fmt) else written) == a + b
    assert answer_key("add", fmt, e.answer) == e.key
    if fmt != "random_space":
        assert answer_number("add", fmt, e.answer) == a + b
    if fmt == "random_space":
        assert re.fullmatch(r"[\d ]+? {2,6}[\d ]+? {2,6}", e.prompt + " ")


@given(a=st.integers(0, 10**30))
def test_reverse_answers(a):
    e = render_example("reverse", "basic", a)
    assert digits_of(e.answer) == str(a)[::-1] == e.key and e.b is None


# --- answer_key on model completions ----------------------------------------------------------------------


def test_answer_key_reads_completions():
    assert answer_key("mul", "basic", " 7 3 9<|endoftext|> 1 2") == "739"
    assert answer_key("mul", "basic", " 7 3 9\n 1 2") == "739"
    assert answer_key("mul", "basic", " 7 x 9") is None
    assert answer_key("mul", "basic", "") is None
    assert answer_key("add_scratchpad", "basic", " 0 + 9 + 1 = 1 0, 1 + 3") is None
    assert answer_key("add_scratchpad", "recursive_scratchpad", " 0 + 9 + 1 = 1 0 , = 0 ,") is None
    assert answer_key("dialogue", "basic", " Teacher: Adding 4 2 and 6 2 gives 1 0 4. Student: 9") == "104"
    assert answer_key("dialogue", "basic", " Teacher: Sure! 904 is the answer.") == "904"
    assert answer_key("dialogue", "basic", " Teacher: I do not know.") is None
    assert answer_key("dialogue", "basic", "\n Teacher: It is 9 0 4.\nStudent: 1 2") == "904"
    assert answer_key("mul", "basic", " ² 3") is None


def test_problem_id_ignores_format_and_spaces():
    rng = np.random.default_rng(0)
    spaced_line = render_example("add", "random_space", 48, 4, rng=rng)
    assert problem_id(spaced_line) == problem_id(render_example("add", "basic", 48, 4)) == ("+", 48, 4)
    assert problem_id(render_example("mul", "basic", 3, 4)) == ("*", 3, 4)
    assert problem_id(render_example("mul", "basic", 3, 4, first_step=True)) == ("%", 3, 4)
    assert problem_id(render_example("reverse", "basic", 12, digits=4)) == ("reverse", "0012")
    assert problem_id(Example("dialogue", "basic", 0, None, "Student:  hello", "", "")) == (
        "text",
        "Student: hello",
    )


# --- bad input ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: render_line("mull", "basic", 1, 2), "choose one of: mul, add_scratchpad"),
        (lambda: render_line("mul", "bsic", 1, 2), "choose one of: basic, reverse_product"),
        (lambda: render_line("mul", "padding", 123, 2, max_digits=2), "more than max_digits=2"),
        (lambda: render_line("mul", "padding", 1, 2), "needs max_digits"),
        (lambda: render_line("add", "basic", 1, 2, colour=1), "valid: max_digits, rng, spaces"),
        (lambda: render_line("add", "basic", -1, 2), "non-negative"),
        (lambda: render_line("add", "random_space", 1, 2), "needs rng="),
        (lambda: render_line("add_scratchpad", "random_space", 1, 2), "needs rng="),
        (lambda: render_line("mul", "basic", 1, None), "non-negative"),
    ],
)
def test_bad_input_names_the_choices(call, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        call()


@given(a=st.integers(0, 10**25), b=st.integers(0, 10**25))
def test_length_formats_write_every_number_so_digits_of_equal_significance_line_up(a, b):
    """lsd_first (Abacus's): every number least significant digit first, no padding; line_padding_reverse
    (position coupling's): the operands zero-padded to the longer one, the sum reversed at one digit more,
    so the k-th digit of each operand and the k-th of the answer (from its own end) are of equal weight."""
    prompt, answer, _ = render_parts("add", "lsd_first", a, b)
    sa, sb = (digits_of(part) for part in prompt.rstrip(" =").split(" + "))
    assert (sa, sb, digits_of(answer)) == (str(a)[::-1], str(b)[::-1], str(a + b)[::-1])
    prompt, answer, _ = render_parts("add", "line_padding_reverse", a, b)
    sa, sb = (digits_of(part) for part in prompt.rstrip(" =").split(" + "))
    width = max(len(str(a)), len(str(b)))
    assert len(sa) == len(sb) == width and len(digits_of(answer)) == width + 1
    assert int(sa) == a and int(sb) == b and int(digits_of(answer)[::-1]) == a + b


def test_length_formats_take_any_length_beyond_max_digits():
    """No width is fixed: a line far longer than the training digits is written, never refused or cut."""
    a, b = 10**29 + 7, 3
    for fmt in ("lsd_first", "line_padding_reverse"):
        assert answer_number("add", fmt, render_parts("add", fmt, a, b, max_digits=5)[1]) == a + b
