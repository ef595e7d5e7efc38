"""Teacher-forced exact match: whether a model, fed every true token before it, predicts each token of an
answer, its end of text included.

Not what this project scores (a reply is judged as greedy decoding writes it, one token feeding the next),
but what position coupling's authors report (their code's "instance accuracy" takes the argmax at every
answer position of one forward pass over the whole true line). It lets their numbers be set beside this
project's models on the same problems, and it tells a model that gets every digit right but cannot stop
(a termination error, which greedy decoding counts wrong, as a teacher-forced reading does) from one whose
first wrong digit throws the rest off (which teacher forcing does not count against the digits after it).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from arith.data.examples import Example
from arith.model.tokenizer import encode_examples
from arith.training.batching import pad_token_id


@torch.no_grad()
def forced_correct(model, tokenizer, examples: Sequence[Example], batch_size: int = 256) -> list[bool]:
    """For each example, whether the argmax at every answer position of its true line is the true next
    token (the answer's tokens and the end of text). Lines are right-padded, so each real token keeps the
    positions greedy decoding gives it; random position draws use the evaluation's fixed seed."""
    model.eval()
    encoded = encode_examples(tokenizer, examples)
    pad, device = pad_token_id(tokenizer), model.device
    out: list[bool] = []
    for first in range(0, len(encoded), batch_size):
        chunk = encoded[first : first + batch_size]
        width = max(len(ids) for ids, _ in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, (line, _) in enumerate(chunk):
            ids[row, : len(line)] = torch.tensor(line)
            mask[row, : len(line)] = 1
        logits = model(ids.to(device), mask.to(device)).logits.argmax(-1).cpu()
        for row, (line, answer_start) in enumerate(chunk):
            predicted = logits[row, answer_start - 1 : len(line) - 1]
            out.append(bool((predicted == ids[row, answer_start : len(line)]).all()))
    return out
