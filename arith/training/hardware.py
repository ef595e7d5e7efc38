"""Where a run computes: the device, bf16 autocast, CPU threads and torch.compile (used by the trainer,
the benchmarks and the GPU cost tools alike). The attention kernel is the model's: `arith.model.attention`."""

from __future__ import annotations

import os
import warnings
from contextlib import nullcontext

import torch

from arith.config import ConfigError, TrainConfig


def resolve_device(name: str) -> torch.device:
    """`auto` = CUDA when present; asking for `cuda` without one is an error, not a silent CPU run."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device='cuda' but no CUDA device is available; use 'auto' or 'cpu'")
    return torch.device(name)


def autocast_context(device: torch.device, precision: str):
    """bf16 autocast on CUDA for `auto`/`bf16`; on a CPU only when bf16 is asked for explicitly, so that
    a CPU sweep computes the same numbers whichever processor it lands on."""
    if precision == "bf16" and device.type == "cpu" and not cpu_has_native_bf16():
        warnings.warn(
            "train.precision=bf16 on a CPU without AVX512-BF16 or AMX: bf16 is emulated there and runs "
            "slower than fp32",
            stacklevel=2,
        )
    if precision == "bf16" or (precision == "auto" and device.type == "cuda"):
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return nullcontext()


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX), where bf16 autocast pays."""
    return any(
        getattr(torch.cpu, probe, lambda: False)()
        for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    )


def cpu_threads(requested: int) -> int:
    """Threads for a CPU run: the request (a scheduler sets it to the trial's CPUs), else this process's."""
    if requested > 0:
        return requested
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def compile_model(model: torch.nn.Module, t: TrainConfig) -> torch.nn.Module:
    """The module the training step calls: `model` itself, or compiled in `train.compile_mode`."""
    return torch.compile(model, mode=t.compile_mode) if t.compile else model
