"""Where a run computes: the device, bf16 autocast, CPU threads and torch.compile (used by the trainer,
the benchmarks and the GPU cost tools alike). The attention kernel is the model's: `arith.model.attention`."""

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
    """bf16 autocast on CUDA for `auto`/`bf16`; on a CPU only when bf16 is asked for explicitly, so that
    a CPU sweep computes the same numbers whichever processor it lands on. On a CPU without bf16 hardware
    the autocast's matrix products run on fp32 kernels (`EmulatedBf16Autocast`)."""
    if precision == "bf16" and device.type == "cpu" and not cpu_has_native_bf16():
        return EmulatedBf16Autocast()
    if precision == "bf16" or (precision == "auto" and device.type == "cuda"):
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return nullcontext()


def bf16_matmuls(device: torch.device, precision: str) -> str:
    """How a run's bf16 matrix products are computed, for its record: "native" (bf16 hardware or CUDA),
    "fp32 kernels" (`EmulatedBf16Autocast`), or "none" (an fp32 run)."""
    autocast = autocast_context(device, precision)
    if isinstance(autocast, EmulatedBf16Autocast):
        return "fp32 kernels"
    return "native" if isinstance(autocast, torch.autocast) else "none"


#: the matrix products autocast sends to bf16 kernels (linear layers, the LM head, math attention)
_GEMMS = frozenset(
    {
        torch.ops.aten.mm.default,
        torch.ops.aten.addmm.default,
        torch.ops.aten.bmm.default,
        torch.ops.aten.baddbmm.default,
    }
)


class Bf16MatmulsInFp32(TorchDispatchMode):
    """Matrix products of bf16 operands computed by fp32 kernels, their result rounded to bf16.

    On a CPU without AVX512-BF16 or AMX, PyTorch's bf16 GEMM is a slow fallback: 0.9-1.3 GFLOP/s against
    59-83 in fp32 (one core, torch 2.13, 2048 x 256 x 256-1024), which made a bf16 step of
    the tiny model ~12x slower than an fp32 one. A product of two bf16 numbers is exact in fp32 and bf16
    hardware accumulates in fp32 too, so upcasting the operands computes the same thing, up to the order
    of summation (on a 256 x 512 x 128 product, 99.98% of the rounded results are bit-identical and the
    rest one bf16 unit apart). It sits below autograd, so the backward's products are covered as well."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _GEMMS and any(_is_bf16(a) for a in args):
            upcast = [a.float() if _is_bf16(a) else a for a in args]
            return func(*upcast, **kwargs).to(torch.bfloat16)
        return func(*args, **kwargs)


def _is_bf16(value) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype == torch.bfloat16


class EmulatedBf16Autocast(torch.autocast):
    """CPU bf16 autocast whose matrix products run on fp32 kernels (`Bf16MatmulsInFp32`): the numbers of
    bf16 training at about fp32 speed on a CPU without bf16 hardware. Reusable, as `torch.autocast` is.
    The backward runs outside autocast (as PyTorch recommends) but needs the same kernels: see
    `backward_context`."""

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
    """What a step's `loss.backward()` runs in, given the context its forward ran in: fp32 kernels for the
    backward's bf16 products where the forward had them (`EmulatedBf16Autocast`), else nothing."""
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
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
_TRIM_THRESHOLD = 2**31 - 1


def keep_freed_memory() -> bool:
    """Keep freed tensor memory in the process's heap for the next step, rather than handing it back to
    the kernel (glibc only; elsewhere nothing happens). Returns whether it applied.

    glibc serves a large block with its own mmap and unmaps it when freed, and trims the heap's free top,
    so a CPU training step, which frees and reallocates the same activations every step, faults their
    pages in again each time: gpt2-mini at batch 128 took 1.47M minor page faults in 50 steps (2.7 s of
    kernel time), 174k with the thresholds raised (0.8 s), and trained 5-15% faster on one core.
    Process-wide, and nothing a step computes changes; the process keeps
    its peak heap instead of returning it between steps."""
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
    """(what the trials run on, the precision they train in), for a sweep's records: a GPU's name (it
    trains in bf16 autocast), else the CPU (`python -m lab.reproduce` tags its parent runs with it)."""
    if torch.cuda.is_available():
        return machine_of(torch.device("cuda")), "bf16 autocast"
    return machine_of(torch.device("cpu")), "fp32"


def machine_of(device: torch.device) -> str:
    """The machine a run computes on, as a sweep's records name it: the GPU's name, else the CPU's model
    (`cpu_name`), its cores and the system."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu_name()}, {cpus} CPU cores, {platform.system()}"


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model, its family and model numbers, and whether it multiplies bf16 in hardware
    (AVX512-BF16 or AMX): the CPUs a sweep lands on differ from session to session, and its timings (and a
    bf16 trial's cost, ~10x on a CPU that emulates bf16) compare only on one. A virtual machine's model
    name can be the vendor's alone ("AMD EPYC" for a Zen 3, Zen 4 and Zen 5 alike, whose bf16 trials ran
    at ~0.21 and ~0.14 s a step on the last two), so the numbers tell them apart (AMD family 25 model 1:
    Zen 3; 25 model 17: Zen 4; family 26: Zen 5). Read from /proc/cpuinfo; elsewhere the architecture."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("flags", "").split())
    native = "native bf16" if flags & {"avx512_bf16", "amx_bf16"} else "no native bf16"
    family, model = fields.get("cpu family"), fields.get("model")
    numbers = f"family {family} model {model}, " if family and model else ""
    return f"{fields.get('model name') or platform.machine()} ({numbers}{native})"
