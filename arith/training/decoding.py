"""Greedy decoding, as the evaluation scores a reply and as `arith.ask` answers one. Prompts are decoded
in batches of similar length (left-padded, KV cache), each reply until end of text, or end of line once it
has begun, capped at the longest reply the data can produce plus a margin (`reply_cap`). Apart from
`evaluate`'s cell tables so that answering a problem loads no pandas.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence

import numpy as np
import torch

from arith.data.examples import Example
from arith.data.tasks import answer_key, get_task
from arith.model.tokenizer import encode_examples
from arith.training.batching import pad_token_id

#: extra tokens decoded beyond the longest reply the data can produce (room for a wrong, longer answer)
ANSWER_MARGIN = 4


def generate_answers(model, tokenizer, examples: Sequence[Example], **options) -> list[str]:
    """The model's greedy reply to each prompt, in the order of `examples` (options: `generate_replies`)."""
    return generate_replies(model, tokenizer, examples, **options)[0]


def generate_replies(
    model,
    tokenizer,
    examples: Sequence[Example],
    *,
    batch_size: int = 256,
    seed: int = 0,
    max_new_tokens: int = 0,
) -> tuple[list[str], list[bool]]:
    """(replies up to end of text, whether each ended within its cap): what `evaluate` scores."""
    if not examples:
        return [], []
    eos, pad = tokenizer.eos_token_id, pad_token_id(tokenizer)
    prompts, caps, order = decoding_plan(tokenizer, examples, max_new_tokens)
    line_ends = line_end_ids(tokenizer)
    device = model.device
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    was_training = model.training
    model.eval()
    outputs: list[tuple[list[int], torch.Tensor]] = []
    try:
        for first in range(0, len(order), batch_size):
            rows = order[first : first + batch_size]
            input_ids, attention_mask = left_pad([prompts[i] for i in rows], pad)
            new_tokens = model.generate_greedy(
                input_ids.to(device, non_blocking=True),
                attention_mask.to(device, non_blocking=True),
                max_new_tokens=max(caps[i] for i in rows),
                eos_token_id=eos,
                generator=generator,
                stop_token_ids=line_ends,
            )
            outputs.append((rows, new_tokens))
    finally:
        model.train(was_training)
    texts: list[str] = [""] * len(examples)
    ended: list[bool] = [False] * len(examples)
    stops = set(line_ends)
    for rows, new_tokens in outputs:  # one device->host copy per batch, after all decoding is queued
        for i, ids in zip(rows, new_tokens.tolist(), strict=True):
            ids = ids[: caps[i]]
            end = ids.index(eos) if eos in ids else len(ids)
            ended[i] = end < len(ids) or _line_ended(ids, stops)
            texts[i] = tokenizer.decode(ids[:end], skip_special_tokens=True)
    return texts, ended


def is_right(example: Example, reply: str, ended: bool) -> bool:
    """The evaluation's exact match: the reply ended within its cap and its answer key is the example's."""
    return ended and answer_key(example.task, example.format, reply) == example.key


def reply_cap(tokenizer, example: Example, answer_tokens: int) -> int:
    """Tokens to decode for `example`: the longest reply its data can produce (its task says, from the
    reference answer's `answer_tokens`, end of text included), plus ANSWER_MARGIN."""
    return get_task(example.task).reply_tokens(tokenizer, example, answer_tokens) + ANSWER_MARGIN


@functools.lru_cache(maxsize=8)
def line_end_ids(tokenizer) -> tuple[int, ...]:
    """The tokens that hold a line break ("\\n"; GPT-2 has several: "\\n", "\\n\\n", ...)."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return tuple(i for i, text in enumerate(texts) if "\n" in text)


def decoding_plan(
    tokenizer, examples: Sequence[Example], max_new_tokens: int = 0
) -> tuple[list[list[int]], list[int], list[int]]:
    """Each example's prompt (the training encoding's ids before the answer) and reply cap, and the order
    they are decoded in: by prompt length, then cap, so that a batch pads little."""
    encoded = encode_examples(tokenizer, examples)
    prompts = [ids[:start] for ids, start in encoded]
    caps = [
        max_new_tokens or reply_cap(tokenizer, e, len(ids) - start)
        for e, (ids, start) in zip(examples, encoded, strict=True)
    ]
    return prompts, caps, sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), caps[i]))


def _line_ended(ids: Sequence[int], line_ends: Collection[int]) -> bool:
    """Whether a line break follows the reply's first token that is not one (a reply may open with one)."""
    begun = False
    for token in ids:
        if token not in line_ends:
            begun = True
        elif begun:
            return True
    return False


def left_pad(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) with every sequence right-aligned, as greedy decoding needs."""
    width = max(len(s) for s in sequences)
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, seq in enumerate(sequences):
        if seq:
            ids[row, width - len(seq) :] = seq
            mask[row, width - len(seq) :] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)
