"""The attention kernel every model of this project runs, registered with transformers under `ATTENTION`.

It lives beside the model that names it (`arith.model.gpt` builds and loads GPT-2 with
`attn_implementation=ATTENTION`): importing this module registers the kernel, so any code that builds or
loads a model has it, without the model reaching into the trainer.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

#: the attention every model of this project runs (`arith.model.gpt` builds and loads GPT-2 with it)
ATTENTION = "sdpa_fp32_on_cpu"


def sdpa_fp32_on_cpu(module, query, key, value, attention_mask, **kwargs):
    """Transformers' SDPA attention, except that bf16 inputs on a CPU are attended in fp32.

    PyTorch's CPU flash-attention backward is ~8x slower in bf16 than in fp32 (a 128 x 4-head x 13-token
    batch: 31 ms vs 3.9 ms, torch 2.13, AMD EPYC with AVX512-BF16), enough to make a bf16-autocast step of
    the tiny model slower than an fp32 one although its matmuls run 3x faster. Attention is a small share
    of these models' FLOPs, so computing it in fp32 costs little and is, if anything, more exact.
    Elsewhere (fp32, CUDA) this is `sdpa_attention_forward` itself."""
    if query.device.type != "cpu" or query.dtype != torch.bfloat16:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    if attention_mask is not None and attention_mask.is_floating_point():
        attention_mask = attention_mask.float()  # an additive bias must match the queries' dtype
    with torch.autocast("cpu", enabled=False):  # autocast would cast the fp32 inputs back to bf16
        out, weights = sdpa_attention_forward(
            module, query.float(), key.float(), value.float(), attention_mask, **kwargs
        )
    return out.to(query.dtype), weights


AttentionInterface.register(ATTENTION, sdpa_fp32_on_cpu)
AttentionMaskInterface.register(ATTENTION, sdpa_mask)  # the masks SDPA takes
