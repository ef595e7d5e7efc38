"""Where a run computes: the device, bf16 autocast, CPU threads and torch.compile, for the trainer and the
benchmarks alike (the attention kernel is the model's: `arith.model.attention`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from contextlib import nullcontext
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from arith.config import ConfigError, TrainConfig


def resolve_device(name: str) -> torch.device:
    """`auto` = CUDA when present; asking for `cuda` without one is an error, not a silent CPU run."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device='cuda' but no CUDA device is available; use 'auto' or 'cpu'")
    return torch.device(name)


def autocast_context(device: torch.device, precision: str):
    """bf16 autocast on CUDA for `auto`/`bf16`; on a CPU only for `bf16`, so that a CPU sweep computes the
    same numbers on any processor (fp32 kernels where it has no bf16 hardware: `EmulatedBf16Autocast`)."""
    if precision == "bf16" and device.type == "cpu" and not cpu_has_native_bf16():
        return EmulatedBf16Autocast()
    if precision == "bf16" or (precision == "auto" and device.type == "cuda"):
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return nullcontext()


def bf16_matmuls(device: torch.device, precision: str) -> str:
    """How a run's bf16 matrix products are computed, for its record: "native", "fp32 kernels" or "none"."""
    autocast = autocast_context(device, precision)
    if isinstance(autocast, EmulatedBf16Autocast):
        return "fp32 kernels"
    return "native" if isinstance(autocast, torch.autocast) else "none"


#: the matrix products autocast sends to bf16 kernels (linear layers, the LM head, math attention)
_GEMMS = frozenset(getattr(torch.ops.aten, op).default for op in ("mm", "addmm", "bmm", "baddbmm"))


class Bf16MatmulsInFp32(TorchDispatchMode):
    """Matrix products of bf16 operands on fp32 kernels, rounded to bf16: without AVX512-BF16 or AMX, a CPU's
    bf16 GEMM is dozens of times slower. A bf16 product is exact in fp32, where bf16 hardware accumulates too,
    so this computes the same up to the order of summation; below autograd, it covers the backward too."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _GEMMS and any(_is_bf16(a) for a in args):
            upcast = [a.float() if _is_bf16(a) else a for a in args]
            return func(*upcast, **kwargs).to(torch.bfloat16)
        return func(*args, **kwargs)


def _is_bf16(value) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype == torch.bfloat16


class EmulatedBf16Autocast(torch.autocast):
    """CPU bf16 autocast whose matrix products run on fp32 kernels (`Bf16MatmulsInFp32`): bf16 training's
    numbers at about fp32 speed. Reusable, as `torch.autocast` is; the backward: `backward_context`."""

    def __init__(self) -> None:
        super().__init__(device_type="cpu", dtype=torch.bfloat16)
        self._modes: list[Bf16MatmulsInFp32] = []

    def __enter__(self):
        super().__enter__()
        mode = Bf16MatmulsInFp32()
        mode.__enter__()
        self._modes.append(mode)

    def __exit__(self, *exc):
        self._modes.pop().__exit__(*exc)
        return super().__exit__(*exc)


def backward_context(autocast) -> Bf16MatmulsInFp32 | nullcontext:
    """What a step's backward runs in (outside autocast): fp32 kernels where its forward had them."""
    return Bf16MatmulsInFp32() if isinstance(autocast, EmulatedBf16Autocast) else nullcontext()


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


#: glibc's mallopt parameters (malloc.h) and the largest mmap threshold it accepts on 64-bit (32 MiB)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX, _TRIM_THRESHOLD = 32 * 1024 * 1024, 2**31 - 1


def keep_freed_memory() -> bool:
    """Keep freed tensor memory in the heap for the next step (glibc only; returns whether it applied): glibc
    unmaps large freed blocks, so a CPU step faulted its activations' pages in again each step (5-15% slower
    on one core). Process-wide; nothing a step computes changes, and the process keeps its peak heap."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    mmap_ok = libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
    trim_ok = libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    return bool(mmap_ok and trim_ok)  # mallopt returns 1 on success


def compile_model(model: torch.nn.Module, t: TrainConfig) -> torch.nn.Module:
    """The module the training step calls: `model` itself, or compiled in `train.compile_mode`."""
    return torch.compile(model, mode=t.compile_mode) if t.compile else model


def machine() -> tuple[str, str]:
    """(what the trials run on, the precision they train in), for a sweep's records."""
    if torch.cuda.is_available():
        return machine_of(torch.device("cuda")), "bf16 autocast"
    return machine_of(torch.device("cpu")), "fp32"


def machine_of(device: torch.device) -> str:
    """The machine a run computes on: the GPU's name, else the CPU's model, its cores and the system."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{cpu_name()}, {cpu_threads(0)} CPU cores, {platform.system()}"


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model, family and model numbers, and whether it has bf16 hardware: timings compare
    only on one CPU, and a virtual machine's model name can be the vendor's alone ("AMD EPYC" for Zen 3, 4
    and 5), which the numbers tell apart. Read from /proc/cpuinfo; elsewhere the architecture."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    fields = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in lines if ":" in line)}
    flags = set(fields.get("flags", "").split())
    native = "native bf16" if flags & {"avx512_bf16", "amx_bf16"} else "no native bf16"
    family, model = fields.get("cpu family"), fields.get("model")
    numbers = f"family {family} model {model}, " if family and model else ""
    return f"{fields.get('model name') or platform.machine()} ({numbers}{native})"
