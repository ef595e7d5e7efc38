"""Sampling follows the paper's appendix: digit counts, number ranges, augmentation, test cells, seeds."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from arith.config import ConfigError, DataConfig
from arith.data.datasets import test_examples, train_examples
from arith.data.sampling import below_pow10, digit_counts, generator, repetitive, with_digits
from arith.data.tasks import answer_key, problem_id, problem_ids


def frequencies(values) -> dict[int, float]:
    counts = Counter(values)
    return {k: v / len(values) for k, v in sorted(counts.items())}


def mul_cfg(**kw) -> DataConfig:
    return DataConfig(
        **{"task": "mul", "format": "reverse_product", "max_digits": 5, "train_samples": 30_000, **kw}
    )


# --- numbers ------------------------------------------------------------------------------------------------


def test_with_digits_gives_exactly_that_many_digits_even_past_int64():
    rng = generator(0, "train")
    digits = np.array([1, 2, 9, 18, 19, 20, 37] * 200)
    numbers = with_digits(rng, digits)
    assert [len(str(x)) for x in numbers] == digits.tolist()
    # 1-digit numbers are 0..9 (0 included), longer ones have a non-zero leading digit
    ones = [x for x, d in zip(numbers, digits, strict=True) if d == 1]
    assert min(ones) == 0 and max(ones) == 9
    leads = Counter(str(x)[0] for x, d in zip(numbers, digits, strict=True) if d == 20)
    assert set(leads) == set("123456789")


def test_below_pow10_is_uniform_over_the_whole_range():
    rng = generator(1, "train")
    numbers = below_pow10(rng, np.full(20_000, 20))
    assert max(numbers) < 10**20
    # a uniform number on [0, 10^20) has 20 digits with probability 0.9, 19 with 0.09
    share = frequencies([len(str(x)) for x in numbers])
    assert share[20] == pytest.approx(0.9, abs=0.01) and share[19] == pytest.approx(0.09, abs=0.01)
    top = frequencies([x // 10**19 for x in numbers])
    assert all(v == pytest.approx(0.1, abs=0.015) for v in top.values())


def test_repetitive_numbers_repeat_one_digit():
    numbers = repetitive(generator(0, "test"), np.full(100, 6))
    assert all(len(set(str(x))) == 1 for x in numbers if x)
    assert {str(x)[0] for x in numbers} == set("0123456789")


# --- multiplication ---------------------------------------------------------------------------------------


def test_mul_digit_counts_are_uniform_and_independent():
    examples = train_examples(mul_cfg())
    for digits in ([len(str(e.a)) for e in examples], [len(str(e.b)) for e in examples]):
        assert all(v == pytest.approx(0.2, abs=0.012) for v in frequencies(digits).values())
    pairs = frequencies([(len(str(e.a)), len(str(e.b))) for e in examples])
    assert len(pairs) == 25 and all(v == pytest.approx(0.04, abs=0.006) for v in pairs.values())


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.4, 3.0])
def test_mul_one_digit_weight(alpha):
    # tb:padding_10_ratio: digit counts from {1..10} with weights {alpha, 1, ..., 1}
    examples = train_examples(mul_cfg(format="padding_reverse", max_digits=10, one_digit_weight=alpha))
    share = frequencies([len(str(e.a)) for e in examples] + [len(str(e.b)) for e in examples])
    assert share.get(1, 0.0) == pytest.approx(alpha / (alpha + 9), abs=0.006)
    assert share[7] == pytest.approx(1 / (alpha + 9), abs=0.01)


def test_mul_augment_every_third_line():
    plain = train_examples(mul_cfg())
    n_times_1 = train_examples(mul_cfg(augment="n_times_1"))
    first_step = train_examples(mul_cfg(augment="first_step"))
    for i, (p, n1, fs) in enumerate(zip(plain, n_times_1, first_step, strict=True)):
        third = i % 3 == 0
        assert (n1.a, n1.b) == ((p.a, p.b % 10) if third else (p.a, p.b))
        assert n1.kind == ("n_times_1" if third else "main")
        assert (fs.a, fs.b) == (p.a, p.b)
        assert fs.kind == ("first_step" if third else "main")
        assert fs.prompt.endswith("%" if third else "#")
        if third:
            assert fs.key == str(p.a * (p.b % 10))[::-1]
        else:
            assert fs.text == p.text
    assert sum(e.b < 10 for e in n_times_1) >= len(n_times_1) / 3


def test_mul_test_grid():
    cfg = mul_cfg(format="padding", max_digits=3, test_per_cell=7)
    examples = test_examples(cfg)
    assert Counter(e.cell for e in examples) == {("main", r, c): 7 for r in (1, 2, 3) for c in (1, 2, 3)}
    for e in examples:
        _, rows, cols = e.cell
        assert len(str(e.b)) == rows and len(str(e.a)) == cols and e.kind == "main"
        assert answer_key(e.task, e.format, e.answer) == e.key == str(e.a * e.b).zfill(6)


# --- addition with a scratchpad, reversal, plain addition -----------------------------------------------


def test_add_scratchpad_training_draws_n_then_addends_below_10_to_the_n():
    cfg = DataConfig(task="add_scratchpad", format="basic", min_digits=2, max_digits=10, train_samples=20_000)
    examples = train_examples(cfg)
    widths = frequencies([e.answer.count(",") for e in examples])  # one comma per step; steps = longer addend
    assert set(widths) <= set(range(1, 11))
    # an addend uniform on [0, 10^n) is shorter than n digits 10% of the time
    fixed = train_examples(
        DataConfig(task="add_scratchpad", format="basic", min_digits=5, max_digits=5, train_samples=10_000)
    )
    short = np.mean([len(str(e.a)) < 5 for e in fixed])
    assert short == pytest.approx(0.1, abs=0.01)
    assert all(e.key == str(e.a + e.b) for e in examples)


def test_add_scratchpad_test_cells_default_to_the_papers_9_to_13():
    cfg = DataConfig(
        task="add_scratchpad", format="random_space", min_digits=2, max_digits=10, test_per_cell=5
    )
    examples = test_examples(cfg)
    assert [c for c in dict.fromkeys(e.cell for e in examples)] == [("main", None, n) for n in range(9, 14)]
    assert all(len(str(e.a)) == len(str(e.b)) == e.cell[2] for e in examples)
    assert any("  " in e.prompt for e in examples)  # test prompts carry random spaces too


def test_reverse_train_and_test():
    cfg = DataConfig(
        task="reverse", format="basic", min_digits=2, max_digits=4, train_samples=3000, test_per_cell=4
    )
    train = train_examples(cfg)
    for e in train:
        written = e.prompt.removesuffix(" #").replace(" ", "")
        assert 2 <= len(written) <= 4 and int(written) == e.a and e.key == written[::-1]
    cells = Counter(e.cell for e in test_examples(cfg))
    assert cells == {(ctx, None, n): 4 for ctx in ("regular", "repetitive") for n in range(2, 11)}


def test_add_digit_counts_and_test_range():
    cfg = DataConfig(task="add", format="padding_reverse", min_digits=1, max_digits=4, train_samples=20_000)
    train = train_examples(cfg)
    for digits in ([len(str(e.a)) for e in train], [len(str(e.b)) for e in train]):
        assert all(v == pytest.approx(0.25, abs=0.015) for v in frequencies(digits).values())
    cells = {e.cell for e in test_examples(cfg)}
    assert cells == {("main", None, n) for n in (1, 2, 3, 4)}


def test_padding_formats_refuse_longer_test_operands():
    with pytest.raises(ConfigError, match="must not exceed"):
        test_examples(DataConfig(task="add", format="padding_reverse", max_digits=3, test_digits=[4]))
    with pytest.raises(ConfigError, match="must not exceed"):
        test_examples(DataConfig(task="mul", format="padding", max_digits=3, test_digits=[2, 5]))


# --- determinism and memorisation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cfg",
    [
        DataConfig(
            task="mul", format="padding_reverse", max_digits=5, augment="first_step", train_samples=500
        ),
        DataConfig(task="add_scratchpad", format="random_space", max_digits=6, train_samples=300),
        DataConfig(task="add", format="random_space", train_samples=300),
        DataConfig(
            task="dialogue",
            format="basic",
            dialogue_easy=100,
            dialogue_hard=20,
            mix_format="basic",
            mix_samples=200,
        ),
    ],
    ids=lambda c: f"{c.task}-{c.format}",
)
def test_same_seed_same_data_other_seed_other_data(cfg):
    import dataclasses

    assert train_examples(cfg) == train_examples(dataclasses.replace(cfg))
    assert test_examples(cfg) == test_examples(cfg)
    assert train_examples(cfg) != train_examples(dataclasses.replace(cfg, seed=1))
    train_texts = {e.text for e in train_examples(cfg)}
    assert not {e.text for e in test_examples(cfg)} <= train_texts


def test_seed_zero_is_pinned():
    # The same seed gives the same data on any machine: PCG64 + SeedSequence, no hash().
    e = train_examples(DataConfig(task="mul", format="basic", max_digits=5, train_samples=3))
    assert [x.text for x in e] == [
        "5 7 2 9 * 5 # 2 8 6 4 5",
        "6 6 * 6 2 7 7 3 # 4 1 4 3 0 1 8",
        "9 * 9 8 1 5 8 # 8 8 3 4 2 2",
    ]


def test_problem_ids_find_memorised_test_problems():
    cfg = DataConfig(task="mul", format="basic", max_digits=2, train_samples=5000, test_per_cell=50)
    seen = problem_ids(train_examples(cfg))
    small = [problem_id(e) in seen for e in test_examples(cfg) if e.cell == ("main", 1, 1)]
    large = [problem_id(e) in seen for e in test_examples(cfg) if e.cell == ("main", 2, 2)]
    assert np.mean(small) == 1.0  # 5000 lines hold every one of the 100 one-digit products
    assert np.mean(large) < 0.5


def test_digit_count_draws():
    rng = generator(0, "train")
    assert set(digit_counts(rng, 1000, 3, 5).tolist()) == {3, 4, 5}
    assert 1 not in digit_counts(rng, 1000, 1, 5, one_digit_weight=0.0)
