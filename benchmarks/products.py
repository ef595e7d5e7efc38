"""What a training step's matrix products cost alone: the device's matmul roofline at a precision, and the
products a profiled step ran (their shapes), timed again with nothing else around them."""

from __future__ import annotations

import time

import torch

from arith.training.hardware import (
    autocast_context,
)


def sync_device(device: torch.device) -> None:
    """Wait for the device's queued work (a CUDA timing reads nothing before it)."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_roofline_flops(device: torch.device, precision: str, size: int = 1024, reps: int = 5) -> float:
    """FLOP/s of one large square matmul under the step's autocast (`train.precision`), on the step's
    threads: what the matrix units deliver, the step's casts included, when shapes are not the bottleneck."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    with autocast_context(device, precision):
        a @ b
        sync_device(device)
        start = time.perf_counter()
        for _ in range(reps):
            a @ b
        sync_device(device)
    return 2 * size**3 * reps / (time.perf_counter() - start)


#: the matrix products a step's profile records, and where their two operands are among its inputs
PRODUCT_OPERANDS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}


def step_products(events) -> list[tuple[str, list[int], list[int]]]:
    """The matrix products among profiled events (`record_shapes=True`), with their operands' shapes, each
    once: autocast redispatches a product it casts, which the profiler records as the same op twice, one
    inside the other."""
    products = []
    for e in events:
        if e.name not in PRODUCT_OPERANDS or not e.input_shapes:
            continue
        if e.cpu_parent is not None and e.cpu_parent.name == e.name:
            continue  # the redispatched inner call of one product
        first, second = PRODUCT_OPERANDS[e.name]
        products.append((e.name, list(e.input_shapes[first]), list(e.input_shapes[second])))
    return products


def products_alone_seconds(products, device: torch.device, dtype: torch.dtype, reps: int = 10) -> float:
    """The time the given matrix products take replayed alone, their operands already in `dtype`: the
    step's floor if everything but its products cost nothing."""
    batched = {"aten::bmm", "aten::baddbmm"}
    total = 0.0
    for name, a_shape, b_shape in products:
        a = torch.randn(*a_shape, device=device, dtype=dtype)
        b = torch.randn(*b_shape, device=device, dtype=dtype)
        product = torch.bmm if name in batched else torch.mm
        product(a, b)
        sync_device(device)
        start = time.perf_counter()
        for _ in range(reps):
            product(a, b)
        sync_device(device)
        total += (time.perf_counter() - start) / reps
    return total
