"""The attention kernel every model runs, registered with transformers as `ATTENTION` on import.

On a CPU the sequences are short (a 3-digit product is ~15 tokens) and PyTorch's kernels are built for
long ones, so under bf16 on a CPU up to `EXPLICIT_MAX_KEYS` keys are attended explicitly in fp32, longer
sequences by SDPA in fp32 (docs/PERFORMANCE.md); in fp32 and on CUDA it is transformers' SDPA. Both
compute softmax(q k^T / sqrt(d)) v in fp32: they differ by the order of their sums."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

ATTENTION = "arith_attention"
#: up to this many keys the explicit attention is the faster on a CPU (docs/PERFORMANCE.md)
EXPLICIT_MAX_KEYS = 16
#: the attention's former name, kept so that models saved under it load
FORMER_ATTENTION = "sdpa_fp32_on_cpu"


class ShortRowSoftmax(torch.autograd.Function):
    """Softmax over the last dimension, written out, and its backward `p * (g - sum(g * p))`: for rows of a
    few dozen entries ~5x faster on a CPU than `torch.softmax`, whose kernel vectorises along the row."""

    @staticmethod
    def forward(ctx, scores: torch.Tensor) -> torch.Tensor:
        least = torch.finfo(scores.dtype).min  # a row masked whole has max -inf: its probabilities are 0
        probs = (scores - scores.amax(-1, keepdim=True).clamp_(min=least)).exp_()
        probs /= probs.sum(-1, keepdim=True).clamp_(min=torch.finfo(scores.dtype).tiny)
        ctx.save_for_backward(probs)
        return probs

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (probs,) = ctx.saved_tensors
        return probs * (grad - (grad * probs).sum(-1, keepdim=True))


def explicit_fp32_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """softmax(q k^T * scale, masked) v in fp32 whatever the inputs' dtype, rounded once to it. Masked
    scores are -inf, not a least finite value (`exp` of a huge negative number takes a slow path on a
    CPU); a row with nothing to attend (a padding query) gets probabilities, output and gradients 0."""
    with torch.autocast("cpu", enabled=False):  # autocast would send the products back to bf16
        q, k, v = query.float(), key.float(), value.float()
        scale = q.size(-1) ** -0.5 if scaling is None else scaling
        scores = torch.matmul(q * scale, k.transpose(-1, -2))
        # where a query may attend, as transformers' SDPA path reads the mask: a boolean one as given, a
        # float one where it is 0, and none as causal (aligned as SDPA's `is_causal`) for several queries
        if attention_mask is not None:
            keep = attention_mask if attention_mask.dtype == torch.bool else attention_mask == 0
            scores = scores.masked_fill(~keep, float("-inf"))
        elif getattr(module, "is_causal", True) and q.size(-2) > 1:
            future = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        probs = ShortRowSoftmax.apply(scores)
        if dropout > 0.0:
            probs = F.dropout(probs, p=dropout, training=True)
        out = torch.matmul(probs, v)
    return out.transpose(1, 2).contiguous().to(query.dtype), None


def arith_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Under bf16 on a CPU: `explicit_fp32_attention` for up to `EXPLICIT_MAX_KEYS` keys, SDPA in fp32 for
    more. Elsewhere transformers' SDPA itself (in fp32 the written-out attention buys nothing measurable)."""
    if query.device.type != "cpu" or query.dtype != torch.bfloat16:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    if key.size(-2) <= EXPLICIT_MAX_KEYS:
        return explicit_fp32_attention(module, query, key, value, attention_mask, **kwargs)
    if attention_mask is not None and attention_mask.is_floating_point():
        attention_mask = attention_mask.float()  # an additive bias must match the queries' dtype
    with torch.autocast("cpu", enabled=False):  # autocast would cast the fp32 inputs back to bf16
        out, weights = sdpa_attention_forward(
            module, query.float(), key.float(), value.float(), attention_mask, **kwargs
        )
    return out.to(query.dtype), weights


for _name in (ATTENTION, FORMER_ATTENTION):
    AttentionInterface.register(_name, arith_attention)
    AttentionMaskInterface.register(_name, sdpa_mask)  # the masks SDPA takes
