"""Student-teacher dialogues about sums (section 4, nl_mix), optionally mixed with plain additions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from arith.config import ConfigError
from arith.data import formats
from arith.data.dialogue import dialogue_test, dialogue_train, load_dialogues, longest_teacher_reply
from arith.data.tasks.base import Task


class Dialogue(Task):
    name = "dialogue"
    formats = ("basic",)
    settings = frozenset({"mix_format", "mix_samples", "dialogue_easy", "dialogue_hard", "dialogue_file"})
    layout = "contexts"
    paper_name = "nl_mix"
    paper_reads_epochs = True
    #: data.mix_format -> the paper's nl_mix data name
    PAPER_MIX_NAMES: ClassVar[Mapping[str, str]] = {
        "none": "dia",
        "basic": "dia+basic",
        "random_space": "dia+random_space",
    }
    #: the test protocol: sums of 2..5-digit numbers (appendix C)
    TEST_DIGITS = (2, 3, 4, 5)
    #: the paper's dialogue counts (2-3-digit, 4-5-digit), by which a --count is split
    SPLIT = (12_200, 1_040)

    def line(self, fmt, a, b, **options):
        return formats.dialogue_line(a, b)

    def train_set(self, cfg):
        return dialogue_train(cfg)

    def test_set(self, cfg):
        return dialogue_test(cfg, self.test_digits(cfg))

    def train_size(self, cfg):
        dialogues = cfg.dialogue_easy + cfg.dialogue_hard
        if cfg.dialogue_file:
            dialogues = len(load_dialogues(cfg.dialogue_file))
        return dialogues + (cfg.mix_samples if cfg.mix_format != "none" else 0)

    def sized(self, count):
        easy = round(count * self.SPLIT[0] / sum(self.SPLIT))
        return {"dialogue_easy": easy, "dialogue_hard": count - easy}

    def default_test_digits(self, cfg):
        return list(self.TEST_DIGITS)

    def check_data(self, cfg):
        super().check_data(cfg)
        counts = (cfg.dialogue_easy, cfg.dialogue_hard)
        if not cfg.dialogue_file and (min(counts) < 0 or sum(counts) < 1):
            raise ConfigError("data.dialogue_easy and dialogue_hard must be >= 0, one dialogue at least")
        if cfg.mix_format != "none" and cfg.mix_samples < 1:
            raise ConfigError(f"data.mix_samples must be >= 1 with mix_format={cfg.mix_format!r}")

    def answer_key(self, fmt, completion):
        """The last number of the teacher's reply (which may open with a line break)."""
        return formats.dialogue_key(formats.first_line(completion.lstrip()))

    def reply_tokens(self, tokenizer, example, answer_tokens):
        """A teacher may answer with any template of arith/data/dialogue.py: the longest, measured at the
        example's digit counts (+ end of text)."""
        if example.b is None:
            return answer_tokens
        longest = longest_teacher_reply(tokenizer, len(str(example.a)), len(str(example.b)))
        return max(answer_tokens, longest + 1)

    def paper_format(self, fmt, mix_format):
        return self.PAPER_MIX_NAMES.get(mix_format)
