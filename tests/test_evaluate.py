"""The evaluator: exact match per cell, memorisation, failures, batching and its speed."""

from __future__ import annotations

import math
import random
import time

import pytest
import torch
from matplotlib.figure import Figure
from torch import nn

from arith.config import DataConfig, ModelConfig
from arith.data.datasets import test_examples
from arith.data.dialogue import ANSWERS, CLOSINGS, REACTIONS, dialogue_train
from arith.data.formats import spaced
from arith.data.tasks import problem_ids
from arith.model.gpt import build_model
from arith.model.tokenizer import build_tokenizer
from arith.tracking.digit_errors import cells_heatmap
from arith.tracking.schema import CELL_COLUMNS
from arith.training.decoding import generate_answers, left_pad
from arith.training.evaluate import evaluate
from arith.training.metrics import summary_metrics


class ScriptedModel(nn.Module):
    """Answers from a script (prompt text -> completion), through the same generate_greedy interface
    as ArithModel: it checks the evaluator's encoding, padding, ordering and scoring, not a network."""

    def __init__(self, tokenizer, script: dict[str, str]) -> None:
        super().__init__()
        self.tokenizer, self.script = tokenizer, script
        self.anchor = nn.Parameter(torch.zeros(1))
        self.budgets: list[int] = []

    @property
    def device(self) -> torch.device:
        return self.anchor.device

    def generate_greedy(
        self, input_ids, attention_mask, max_new_tokens, eos_token_id, *, generator=None, stop_token_ids=()
    ):
        assert torch.all(attention_mask[:, -1] == 1), "prompts must be left-padded"
        self.budgets.append(max_new_tokens)
        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True):
            prompt = self.tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
            completion = self.tokenizer.encode(self.script[prompt], add_special_tokens=False)
            rows.append((completion + [eos_token_id] * max_new_tokens)[:max_new_tokens])
        return torch.tensor(rows)


def mul_examples(per_cell: int = 4):
    return test_examples(
        DataConfig(task="mul", format="padding_reverse", max_digits=2, test_per_cell=per_cell)
    )


def test_scores_cells_failures_and_memorisation_exactly():
    tok = build_tokenizer()
    examples = mul_examples()
    wrong = {e.prompt for e in examples if e.cell == ("main", 2, 1)} | {examples[0].prompt}
    script = {" " + e.prompt: (" 9" + e.answer if e.prompt in wrong else e.answer) for e in examples}
    train = [e for e in examples if e.cell == ("main", 1, 2)][:3]
    shuffled = random.Random(0).sample(examples, len(examples))
    result = evaluate(
        ScriptedModel(tok, script),
        tok,
        shuffled,
        batch_size=3,
        train_problems=problem_ids(train),
        failures_per_cell=2,
    )
    frame = result.to_frame()
    assert list(frame.columns) == list(CELL_COLUMNS)
    assert [(c.row_digits, c.col_digits) for c in result.cells] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert [c.n for c in result.cells] == [4, 4, 4, 4]
    assert [c.correct for c in result.cells] == [3, 4, 0, 4]
    assert result.mean_accuracy() == pytest.approx((0.75 + 1 + 0 + 1) / 4)
    assert [c.seen_in_train for c in result.cells] == [0, 0.75, 0, 0]
    assert result.seen_fraction() == pytest.approx(3 / 16)
    by_cell = [f.cell for f in result.failures]
    assert by_cell.count(("main", 2, 1)) == 2 and by_cell.count(("main", 1, 1)) == 1
    failure = next(f for f in result.failures if f.cell == ("main", 1, 1))
    assert failure.prompt == examples[0].prompt
    assert failure.expected == examples[0].answer.strip()
    assert failure.generated == "9 " + examples[0].answer.strip()
    assert set(result.failures_frame().columns) >= {"prompt", "expected", "generated", "context"}


def test_a_memorised_model_is_right_on_seen_problems_and_wrong_on_unseen_ones():
    """A hand-made memoriser: it answers the training problems right and every other problem wrong, so
    each cell's accuracy splits into 1.0 on its seen and 0.0 on its unseen problems."""
    tok = build_tokenizer()
    examples = mul_examples()
    train = [*[e for e in examples if e.cell == ("main", 2, 2)][:3], examples[0]]
    memorised = {e.prompt for e in train}
    script = {" " + e.prompt: (e.answer if e.prompt in memorised else " 9" + e.answer) for e in examples}
    result = evaluate(ScriptedModel(tok, script), tok, examples, train_problems=problem_ids(train))
    cells = {(c.row_digits, c.col_digits): c for c in result.cells}
    assert (cells[2, 2].n_seen, cells[2, 2].accuracy_seen, cells[2, 2].accuracy_unseen) == (3, 1.0, 0.0)
    assert (cells[1, 1].n_seen, cells[1, 1].accuracy_seen, cells[1, 1].accuracy_unseen) == (1, 1.0, 0.0)
    assert cells[1, 2].n_seen == 0 and math.isnan(cells[1, 2].accuracy_seen)
    assert cells[1, 2].accuracy_unseen == 0.0
    assert cells[2, 2].accuracy == 0.75 and cells[2, 2].seen_in_train == 0.75
    metrics = summary_metrics(result.to_frame(), seconds=1.0)
    assert metrics["test_acc/seen"] == 1.0 and metrics["test_acc/unseen"] == 0.0


def test_without_a_training_set_the_split_is_unknown():
    tok = build_tokenizer()
    examples = mul_examples(2)
    result = evaluate(ScriptedModel(tok, {" " + e.prompt: e.answer for e in examples}), tok, examples)
    frame = result.to_frame()
    assert frame[["n_seen", "accuracy_seen", "accuracy_unseen"]].isna().all().all()
    assert "test_acc/unseen" not in summary_metrics(frame, seconds=1.0)


def test_decoding_budget_is_the_longest_answer_plus_a_margin():
    tok = build_tokenizer()
    examples = mul_examples(2)
    model = ScriptedModel(tok, {" " + e.prompt: e.answer for e in examples})
    result = evaluate(model, tok, examples, batch_size=len(examples))
    assert result.mean_accuracy() == 1.0 and math.isnan(result.seen_fraction())
    answer_tokens = max(len(tok.encode(e.answer, add_special_tokens=False)) for e in examples)
    assert model.budgets == [answer_tokens + 1 + 4]  # + eos + ANSWER_MARGIN


def test_examples_without_a_cell_are_refused():
    tok = build_tokenizer()
    example = mul_examples(1)[0]
    unlabelled = type(example)(**{**{f: getattr(example, f) for f in example.__slots__}, "cell": None})
    with pytest.raises(ValueError, match="cell"):
        evaluate(ScriptedModel(tok, {}), tok, [unlabelled])


def tiny_model(position: str, tok):
    torch.manual_seed(0)
    return build_model(ModelConfig(preset="nano", n_positions=64, position=position), tok)


def test_real_model_evaluation_is_deterministic_and_restores_the_mode():
    tok = build_tokenizer()
    model = tiny_model("random_embed", tok).train()
    examples = test_examples(DataConfig(task="add", format="padding_reverse", max_digits=3, test_per_cell=4))
    first = evaluate(model, tok, examples, batch_size=5, seed=7)
    second = evaluate(model, tok, examples, batch_size=5, seed=7)
    assert model.training
    assert first.to_frame().equals(second.to_frame())
    assert [c.col_digits for c in first.cells] == [1, 2, 3] and all(c.row_digits is None for c in first.cells)
    assert first.samples_per_s > 0


def test_batching_does_not_change_the_answers():
    """Length-sorted, left-padded batches give each prompt what it gets alone."""
    tok = build_tokenizer()
    model = tiny_model("learned", tok).double()
    examples = mul_examples(2)
    batched = generate_answers(model, tok, examples, batch_size=8)
    alone = generate_answers(model, tok, examples, batch_size=1)
    assert batched == alone


def test_heatmap_draws_the_grid_of_one_context():
    tok = build_tokenizer()
    examples = mul_examples(1)
    frame = evaluate(
        ScriptedModel(tok, {" " + e.prompt: e.answer for e in examples}), tok, examples
    ).to_frame()
    figure = cells_heatmap(frame, "main")
    assert isinstance(figure, Figure)
    image = figure.axes[0].images[0].get_array()
    assert image.shape == (2, 2) and image.min() == 1.0
    one_d = frame.assign(row_digits=None).drop_duplicates("col_digits")
    assert cells_heatmap(one_d, "main").axes[0].images[0].get_array().shape == (1, 2)
    with pytest.raises(ValueError, match="contexts: \\['main'\\]"):
        cells_heatmap(frame, "dialogue")


def test_batched_kv_cache_decoding_is_much_faster_than_generate_per_sample():
    """The benchmark (benchmarks/bench_eval.py) asks 10x on more samples; here a quick 3x."""
    tok = build_tokenizer()
    model = tiny_model("learned", tok).eval()
    examples = test_examples(DataConfig(task="add", format="padding_reverse", max_digits=3, test_per_cell=16))
    new_tokens = max(len(tok.encode(e.answer, add_special_tokens=False)) for e in examples) + 5

    start = time.perf_counter()
    generate_answers(model, tok, examples, batch_size=256)
    batched = time.perf_counter() - start

    start = time.perf_counter()
    for e in examples:
        ids, mask = left_pad([tok.encode(" " + e.prompt, add_special_tokens=False)], tok.pad_token_id)
        model.lm.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=new_tokens,
            do_sample=False,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
    one_by_one = time.perf_counter() - start
    assert one_by_one > 3 * batched, (one_by_one, batched)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_evaluation_matches_cpu_and_runs_under_bf16_autocast():
    tok = build_tokenizer()
    examples = mul_examples(4)
    model = tiny_model("learned", tok).double()
    on_cpu = evaluate(model, tok, examples, batch_size=5)
    generated_cpu = generate_answers(model, tok, examples, batch_size=5)
    model = model.cuda()
    assert generate_answers(model, tok, examples, batch_size=5) == generated_cpu
    assert evaluate(model, tok, examples, batch_size=5).to_frame().equals(on_cpu.to_frame())
    model = tiny_model("random_embed", tok).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        result = evaluate(model, tok, examples, batch_size=5, seed=1)
    assert result.n_samples == len(examples)


# ---------------------------------------------------------------------------------------------------------
# The oracle: every reply the dialogue data can hold, written out whole, must score 100%
# ---------------------------------------------------------------------------------------------------------


def dialogue_test_set(digits: range = range(1, 6), per_cell: int = 3):
    return [e for e in test_examples(_dialogue_cfg(digits, per_cell)) if e.cell[0] == "dialogue"]


def _dialogue_cfg(digits: range, per_cell: int, **more) -> DataConfig:
    return DataConfig(
        task="dialogue", format="basic", test_digits=list(digits), test_per_cell=per_cell, **more
    )


def template_replies(example, reaction: str, answer: str, closing: str) -> str:
    a, b, s = (spaced(str(n)) for n in (example.a, example.b, example.a + example.b))
    return f" Teacher: {reaction} {answer.format(a=a, b=b, s=s)}{closing}\n Student: Thanks!"


@pytest.mark.parametrize("answer", ANSWERS)
def test_oracle_writing_each_teacher_template_scores_every_sum(answer):
    """Each answer template, with the longest and the shortest reaction and closing, on 1-5-digit sums;
    the reply runs on to a new line (the next turn), which the reading stops at."""
    tok = build_tokenizer()
    examples = dialogue_test_set()
    longest = max(REACTIONS, key=len), max(CLOSINGS, key=len)
    for reaction, closing in (longest, ("Sure thing.", "")):
        script = {" " + e.prompt: template_replies(e, reaction, answer, closing) for e in examples}
        result = evaluate(ScriptedModel(tok, script), tok, examples, batch_size=4)
        assert [c.col_digits for c in result.cells] == [1, 2, 3, 4, 5]
        assert result.mean_accuracy() == 1.0, result.failures_frame().to_string()


def test_oracle_writing_free_form_replies_of_a_dialogue_file_scores_every_sum(tmp_path):
    """Replies of a user's dialogue file (unspaced numbers, the sum last), loaded through
    data.dialogue_file; longer ones than the templates need train.eval_max_new_tokens."""
    examples = dialogue_test_set()
    short = "Teacher: Well, {a} and {b}... I make that {s}."
    chatty = (
        "Teacher: What a lovely question, thank you so much for asking it on such a fine afternoon! "
        "Let us line the digits up, start from the ones place, carry whenever a column reaches ten, "
        "and check every step twice before we write anything on the board. Adding {a} and {b} gives {s}."
    )
    for reply, cap in ((short, 0), (chatty, 160)):
        path = tmp_path / "dialogues.txt"
        lines = [
            f"Student: Hi, what is the sum of {e.a} and {e.b}? " + reply.format(a=e.a, b=e.b, s=e.a + e.b)
            for e in examples
        ]
        path.write_text("\n".join(lines) + "\n")
        loaded = dialogue_train(_dialogue_cfg(range(1, 6), 3, dialogue_file=str(path)))
        tok = build_tokenizer(e.text for e in loaded)
        script = {" " + e.prompt: e.answer for e in loaded}
        assert set(script) == {" " + e.prompt for e in examples}
        result = evaluate(ScriptedModel(tok, script), tok, examples, batch_size=4, max_new_tokens=cap)
        assert result.mean_accuracy() == 1.0, result.failures_frame().to_string()


def test_a_reply_cut_off_by_the_cap_is_wrong():
    """A reply that has not ended within the cap is not read (its last number may be half a sum)."""
    tok = build_tokenizer()
    examples = dialogue_test_set(range(3, 4), 2)
    script = {" " + e.prompt: template_replies(e, "Sure.", "The answer is {s}.", "") for e in examples}
    assert evaluate(ScriptedModel(tok, script), tok, examples, max_new_tokens=60).mean_accuracy() == 1.0
    assert evaluate(ScriptedModel(tok, script), tok, examples, max_new_tokens=12).mean_accuracy() == 0.0


def test_a_reply_may_open_with_a_line_break_and_ends_at_the_next():
    tok = build_tokenizer()
    examples = dialogue_test_set(range(2, 3), 2)
    script = {" " + e.prompt: "\n" + template_replies(e, "Sure.", "The sum is {s}.", "") for e in examples}
    model = ScriptedModel(tok, script)
    assert evaluate(model, tok, examples).mean_accuracy() == 1.0


def test_real_model_stops_each_row_at_its_line_end():
    """generate_greedy ends a row at a line break written after the reply began; an opening one runs on."""
    tok = build_tokenizer()
    model = tiny_model("random_embed", tok).eval()  # an untrained model whose reply varies

    def greedy(stops=()):
        return model.generate_greedy(
            ids, mask, 12, tok.eos_token_id, generator=torch.Generator().manual_seed(0), stop_token_ids=stops
        )[0].tolist()

    ids, mask = left_pad([tok.encode(" 1 + 2 =", add_special_tokens=False)], tok.pad_token_id)
    free = greedy()
    first = next(k for k, t in enumerate(free) if t != free[0])  # pretend this token is a line break
    stopped = greedy((free[first],))
    assert stopped[: first + 1] == free[: first + 1]
    assert set(stopped[first + 1 :]) == {tok.eos_token_id}
    opening = greedy((free[0],))  # the reply opens with the "line break": it runs on past it
    assert opening[: first + 1] == free[: first + 1]
