"""Student-teacher dialogues asking for a sum (appendix C), and a loader for a user's own dialogues.

The paper had GPT-3.5 write ~13,240 dialogues; with no language model to call, a generator composes them
from openings, questions, reactions, answers and closings, keeping the data's imperfections (~3% broken
over two lines or followed by a separator, ~0.2% wrong 4-5-digit sums). The sum is always the last number
in the teacher's reply."""

from __future__ import annotations

import functools
import itertools
import json
import re
from pathlib import Path

import numpy as np

from arith.config import DataConfig
from arith.data.examples import Example
from arith.data.formats import dialogue_key, dialogue_line, first_line, spaced
from arith.data.sampling import add_examples, add_test, generator, same_digits, with_digits

#: (probability of 2 digits, of 3 digits) for the easy dialogues; (4, 5) digits 0.5/0.5 for the hard ones
EASY_DIGITS = ((2, 0.3), (3, 0.7))
HARD_DIGITS = ((4, 0.5), (5, 0.5))
#: the paper's noise rates: broken lines over all dialogues, wrong sums among the hard (4-5-digit) ones
BROKEN_RATE = 0.03
WRONG_RATE = 0.002
#: the arithmetic lines mixed into the dialogues (nl_mix): operand digit counts uniform on 1..5
MIX_DIGITS = (1, 5)

OPENINGS = (
    "Hi,",
    "Hello!",
    "Good morning!",
    "Good afternoon, teacher.",
    "Excuse me, can you help me with something?",
    "Hey, do you have a minute?",
    "Sorry to bother you, but I am stuck on my homework.",
    "Hi there! I have been working on my math assignment all evening.",
    "Good evening! I hope you are doing well today.",
    "Teacher, I have a quick question about addition.",
    "Hello, I was wondering if you could help me out.",
    "Hi! My friend and I could not agree on an answer.",
    "Excuse me, I think I made a mistake somewhere.",
    "Hey teacher, math is giving me a hard time again.",
    "Hi, I am practicing for the quiz tomorrow.",
    "Hello! I love numbers but this one confuses me.",
    "Good morning, I tried this problem three times already.",
    "Hi, sorry, this might be a silly question.",
    "Hello teacher, I need some help with a sum.",
    "Hey! Could you check something for me?",
)

QUESTIONS = (
    "I need to add two numbers, {a} and {b}.",
    "What is the sum of {a} and {b}?",
    "Can you help me add {a} and {b}?",
    "What do I get if I add {a} to {b}?",
    "How much is {a} plus {b}?",
    "Could you tell me what {a} and {b} add up to?",
    "I need to find the sum of {a} and {b}.",
    "What is {a} plus {b}?",
    "If I have {a} apples and get {b} more, how many do I have?",
    "Can you work out {a} + {b} for me?",
    "My homework asks for the total of {a} and {b}. What is it?",
    "I am trying to add {a} and {b} but I keep getting different answers.",
    "Would you mind adding {a} and {b} for me?",
    "What is the result when you add {a} and {b} together?",
    "Please help me calculate the sum of {a} and {b}.",
    "How do I add {a} and {b}, and what is the answer?",
    "I wonder what {a} plus {b} equals.",
    "Could you add up {a} and {b}?",
    "What is the total if we combine {a} and {b}?",
    "Is it hard to add {a} and {b}? What do you get?",
)

REACTIONS = (
    "Of course!",
    "Sure thing.",
    "Good question!",
    "Absolutely, I would be happy to help.",
    "Let me do the calculation for you.",
    "No problem at all.",
    "Great, let us work through it together.",
    "That is not a silly question at all.",
    "Happy to help with that.",
    "Let me think about it for a moment.",
    "Certainly, adding is easy once you line up the digits.",
    "Of course, let me write it down on the board.",
    "Sure, start from the ones place and carry when needed.",
    "I am glad you asked.",
    "Hello! Yes, I can help.",
    "Good morning! Sure thing.",
)

ANSWERS = (
    "The answer is {s}.",
    "The sum is {s}.",
    "{a} plus {b} equals {s}.",
    "When you add {a} and {b}, you get {s}.",
    "Adding them together gives {s}.",
    "The total comes out to {s}.",
    "If you add {a} to {b}, the result is {s}.",
    "{s} is the answer.",
    "So the sum of {a} and {b} is {s}.",
    "You should get {s}.",
    "Together they make {s}.",
    "After carrying the digits, the final answer is {s}.",
    "I calculated it, and it is {s}.",
    "The result of the addition is {s}.",
    "That adds up to {s}.",
)

CLOSINGS = (
    "",
    "",
    "",
    " Keep up the good work!",
    " Let me know if you have any other questions.",
    " Does that make sense?",
    " Try checking it yourself next time.",
    " Well done for asking.",
    " Practice makes perfect!",
    " Always double-check your carries.",
)

SEPARATORS = ("---", "***", "###", "* * *", "------------", "===", "~~~")


def _numbers(rng: np.random.Generator, size: int, mix: tuple[tuple[int, float], ...]) -> list[int]:
    digits = rng.choice([d for d, _ in mix], size=size, p=[p for _, p in mix])
    return with_digits(rng, digits)


def _pick(rng: np.random.Generator, options: tuple[str, ...], size: int) -> list[str]:
    return [options[i] for i in rng.integers(0, len(options), size=size).tolist()]


def generate_dialogues(
    rng: np.random.Generator,
    easy: int,
    hard: int,
    *,
    broken_rate: float = BROKEN_RATE,
    wrong_rate: float = WRONG_RATE,
) -> list[Example]:
    """`easy` 2-3-digit and `hard` 4-5-digit dialogues, one a line, in random order. round(broken_rate ·
    total) are broken: half over two lines (a newline before the teacher's turn), half followed by a
    separator line; round(wrong_rate · hard) hard ones state a wrong sum, their key (a model learns the
    noise as the paper's did)."""
    total = easy + hard
    a_list = _numbers(rng, easy, EASY_DIGITS) + _numbers(rng, hard, HARD_DIGITS)
    b_list = _numbers(rng, easy, EASY_DIGITS) + _numbers(rng, hard, HARD_DIGITS)
    picked = rng.choice(hard, size=round(wrong_rate * hard), replace=False).tolist() if hard else []
    wrong = {easy + i for i in picked}
    broken = rng.choice(total, size=round(broken_rate * total), replace=False).tolist() if total else []
    split, separated = set(broken[::2]), set(broken[1::2])
    parts = (OPENINGS, QUESTIONS, REACTIONS, ANSWERS, CLOSINGS, SEPARATORS)
    openings, questions, reactions, answers, closings, separators = (_pick(rng, p, total) for p in parts)
    out = []
    for i, (a, b) in enumerate(zip(a_list, b_list, strict=True)):
        s = a + b
        if i in wrong:  # a plausible wrong sum: off by one, ten or a hundred (never negative, never right)
            offset = int(rng.choice([-100, -10, -1, 1, 10, 100]))
            s = s + offset if s + offset >= 0 else s - offset
        sa, sb = spaced(str(a)), spaced(str(b))
        question = questions[i].format(a=sa, b=sb)
        if openings[i].endswith(","):  # "Hi, what is ..." as in the paper's test prompt
            question = question[0].lower() + question[1:]
        prompt = f"Student: {openings[i]} {question}" + ("\n" if i in split else "")
        answer = f" Teacher: {reactions[i]} {answers[i].format(a=sa, b=sb, s=spaced(str(s)))}{closings[i]}"
        answer += "\n" + separators[i] if i in separated else ""
        out.append(Example("dialogue", "basic", a, b, prompt, answer, str(s), "dialogue"))
    return [out[i] for i in rng.permutation(total).tolist()]


_UNSPACED_DIGIT = re.compile(r"(?<=\S)(?=\d)")
_NUMBER = re.compile(r"\d(?: \d)*")


def space_digits(text: str) -> str:
    """'842 and 62' -> '8 4 2 and 6 2': a space before every digit (none is added at the very start)."""
    return _UNSPACED_DIGIT.sub(" ", text)


def dialogue_example(text: str) -> Example:
    """A dialogue line -> Example: prompt = the student's part (a, b: its first two numbers, 0 / None when
    missing), answer = `` Teacher: ...``, key = the reply's last number ('' when it has none)."""
    text = space_digits(text.strip())
    cut = text.find(" Teacher:")
    prompt, answer = (text[:cut], text[cut:]) if cut > 0 else (text, "")
    numbers = [int(n.replace(" ", "")) for n in _NUMBER.findall(prompt)]
    a = numbers[0] if numbers else 0
    b = numbers[1] if len(numbers) > 1 else None
    key = dialogue_key(first_line(answer.lstrip())) or ""  # as Dialogue.answer_key reads it
    return Example("dialogue", "basic", a, b, prompt, answer, key, "dialogue")


def load_dialogues(path: str | Path) -> list[Example]:
    """Dialogues from a JSONL file (one object a line with a `text` field) or plain text (one a line)."""
    path = Path(path)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"dialogue file {str(path)!r} holds no dialogues")
    if path.suffix not in (".jsonl", ".json") and not lines[0].lstrip().startswith("{"):
        return [dialogue_example(t) for t in lines]
    texts = []
    for number, line in enumerate(lines, 1):
        try:
            texts.append(str(json.loads(line)["text"]))
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise ValueError(f"{path}:{number}: not a JSON object with a 'text' field ({err})") from err
    return [dialogue_example(t) for t in texts]


def dialogue_train(cfg: DataConfig) -> list[Example]:
    """The dialogues (generated, or cfg.dialogue_file), with cfg.mix_samples arithmetic lines mixed in
    when cfg.mix_format is not 'none'; shuffled together."""
    if cfg.dialogue_file:
        dialogues = load_dialogues(cfg.dialogue_file)
    else:
        dialogues = generate_dialogues(generator(cfg.seed, "dialogue"), cfg.dialogue_easy, cfg.dialogue_hard)
    if cfg.mix_format == "none":
        return dialogues
    rng = generator(cfg.seed, "mix")
    lo, hi = MIX_DIGITS
    mixed = dialogues + add_examples(rng, cfg.mix_format, cfg.mix_samples, lo, hi, hi, kind="mix")
    return [mixed[i] for i in rng.permutation(len(mixed)).tolist()]


def dialogue_test(cfg: DataConfig, digits: list[int]) -> list[Example]:
    """Cells ("dialogue", None, n): the paper's student question; ("pure_addition", None, n): the mixed
    arithmetic format's prompt (basic when nothing is mixed in)."""
    rng = generator(cfg.seed, "dialogue_test")
    out = [
        Example("dialogue", "basic", a, b, *dialogue_line(a, b), "dialogue", ("dialogue", None, n))
        for n in digits
        for a, b in zip(*same_digits(rng, n, cfg.test_per_cell), strict=True)
    ]
    fmt = "basic" if cfg.mix_format == "none" else cfg.mix_format
    return out + add_test(cfg, digits, context="pure_addition", fmt=fmt)


@functools.lru_cache(maxsize=64)
def longest_teacher_reply(tokenizer, digits_a: int, digits_b: int) -> int:
    """Tokens of the longest `` Teacher: {reaction} {answer}{closing}`` for sums of these digit counts
    (the sum one digit longer than the longer addend, as the largest sums are)."""
    a, b, s = (spaced("9" * n) for n in (digits_a, digits_b, max(digits_a, digits_b) + 1))
    replies = [
        f" Teacher: {reaction} {answer.format(a=a, b=b, s=s)}{closing}"
        for reaction, answer, closing in itertools.product(REACTIONS, ANSWERS, CLOSINGS)
    ]
    encoded = tokenizer.backend_tokenizer.encode_batch(replies, add_special_tokens=False)
    return max(len(enc.ids) for enc in encoded)
