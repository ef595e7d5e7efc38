"""The project's attention (`arith.model.attention`): under bf16 on a CPU, short sequences are attended
explicitly in fp32 (`explicit_fp32_attention`), longer ones by fp32 SDPA, fp32 runs by SDPA itself; the
explicit kernel checked against a float64 reference, forward and backward, with every kind of mask
transformers hands it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from arith.model.attention import (
    EXPLICIT_MAX_KEYS,
    FORMER_ATTENTION,
    arith_attention,
    explicit_fp32_attention,
)

MODULE = SimpleNamespace(is_causal=True, training=False)


def qkv(batch: int, q_len: int, kv_len: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(batch * 100 + q_len)
    make = lambda n: torch.randn(batch, 3, n, 8, generator=g, dtype=torch.float64)  # noqa: E731
    return [t.to(dtype).requires_grad_() for t in (make(q_len), make(kv_len), make(kv_len))]


def reference(q, k, v, keep):
    """softmax(q k^T / sqrt(d)) v in float64; rows with nothing to attend give 0 (as the kernel does)."""
    q, k, v = q.double(), k.double(), v.double()
    scores = (q @ k.transpose(-1, -2)) / q.size(-1) ** 0.5
    scores = scores.masked_fill(~keep, float("-inf"))
    probs = torch.softmax(scores, -1).nan_to_num(0.0)
    return (probs @ v).transpose(1, 2)


def padding_mask(batch: int, length: int) -> torch.Tensor:
    """Causal, with left padding: row b's first b columns are padding (its first queries attend nothing)."""
    keep = torch.ones(batch, 1, length, length, dtype=torch.bool).tril()
    for b in range(batch):
        keep[b, :, :, :b] = False
    return keep


@pytest.mark.parametrize("length", [1, 5, EXPLICIT_MAX_KEYS])
def test_explicit_attention_matches_float64_forward_and_backward(length: int) -> None:
    q, k, v = qkv(3, length, length)
    keep = padding_mask(3, length)
    out, weights = explicit_fp32_attention(MODULE, q, k, v, keep)
    expected = reference(q, k, v, keep)
    assert weights is None and out.dtype == torch.float32 and out.shape == (3, length, 3, 8)
    assert torch.allclose(out.double(), expected, atol=1e-6)
    grad = torch.randn_like(out)
    got = torch.autograd.grad(out, (q, k, v), grad)
    want = torch.autograd.grad(expected, (q, k, v), grad.double())
    for a, b in zip(got, want, strict=True):
        assert torch.isfinite(a).all() and torch.allclose(a.double(), b.double(), atol=1e-5)


def test_the_masks_transformers_hands_it_are_read_as_sdpa_reads_them() -> None:
    q, k, v = qkv(2, 6, 6)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    with torch.no_grad():
        none, _ = explicit_fp32_attention(MODULE, q, k, v, None)  # no mask: causal
        boolean, _ = explicit_fp32_attention(MODULE, q, k, v, causal.expand(2, 1, 6, 6))
        additive = torch.zeros(2, 1, 6, 6).masked_fill(~causal, torch.finfo(torch.float32).min)
        bias, _ = explicit_fp32_attention(MODULE, q, k, v, additive)
        sdpa, _ = sdpa_attention_forward(MODULE, q, k, v, None)
    assert torch.allclose(none, sdpa, atol=1e-6)
    assert torch.equal(none, boolean) and torch.equal(none, bias)
    q1, k1, v1 = qkv(2, 1, 6)  # one query against a cache of keys (decoding): it attends every key
    with torch.no_grad():
        step, _ = explicit_fp32_attention(MODULE, q1, k1, v1, None)
    assert torch.allclose(step.double(), reference(q1, k1, v1, torch.ones(1, 6, dtype=torch.bool)), atol=1e-6)


def test_under_cpu_bf16_autocast_it_attends_in_fp32_and_rounds_once() -> None:
    q, k, v = qkv(2, 7, 7, torch.bfloat16)
    keep = padding_mask(2, 7)
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
        out, _ = arith_attention(MODULE, q, k, v, keep)
        exact, _ = explicit_fp32_attention(MODULE, q.float(), k.float(), v.float(), keep)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, exact.bfloat16())


def test_fp32_is_sdpa_itself() -> None:
    q, k, v = qkv(2, 7, 7)
    with torch.no_grad():
        assert torch.equal(
            arith_attention(MODULE, q, k, v, None)[0], sdpa_attention_forward(MODULE, q, k, v, None)[0]
        )


def test_longer_sequences_take_fp32_sdpa() -> None:
    length = EXPLICIT_MAX_KEYS + 4
    q, k, v = qkv(2, length, length, torch.bfloat16)
    with torch.no_grad():
        out, _ = arith_attention(MODULE, q, k, v, None)
        sdpa, _ = sdpa_attention_forward(MODULE, q.float(), k.float(), v.float(), None)
    assert out.dtype == torch.bfloat16 and torch.equal(out, sdpa.bfloat16())


def test_models_saved_under_the_former_name_still_find_it() -> None:
    from transformers import AttentionInterface

    assert AttentionInterface().get_interface(FORMER_ATTENTION, None) is arith_attention
