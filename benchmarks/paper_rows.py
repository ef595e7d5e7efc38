"""The rows of bench_paper's table: each point's measured step time and memory beside its trial's
steps, and each grid's total on one GPU with trials packed."""

from __future__ import annotations

from arith.tracking.schema import POINT_COLUMN
from sweeps import cost
from sweeps.timing import (
    ModelTiming,
    PointProfile,
)


def point_rows(profiles: list[PointProfile], timings: dict[str, ModelTiming]) -> list[dict]:
    rows = []
    for p in profiles:
        timing = timings[p.key]
        counts = sum(p.width_counts.values())
        step_s = sum(n * timing.at(w) for w, n in p.width_counts.items()) / counts
        train_h = cost.gpu_hours(p.steps * step_s)
        eval_h = cost.gpu_hours(p.evaluations * timing.eval_seconds[p.eval_key])
        rows.append(
            {
                "grid": p.grid,
                POINT_COLUMN: p.point,
                "steps": p.steps,
                "step_ms": round(step_s * 1e3, 3),
                "tokens_per_s": round(p.tokens_per_batch / step_s),
                "widths": dict(sorted(p.width_counts.items())),
                "evaluations": p.evaluations,
                "eval_s": round(timing.eval_seconds[p.eval_key], 2),
                "warmup_s": round(timing.warmup_seconds, 1),
                "peak_memory_gib": None
                if timing.peak_memory_bytes is None
                else round(timing.peak_memory_bytes / 2**30, 2),
                "train_hours": train_h,
                "eval_hours": eval_h,
                "gpu_hours": train_h + eval_h + cost.gpu_hours(timing.warmup_seconds),
            }
        )
    return rows


def grid_rows(rows: list[dict], packing_speedup: float) -> list[dict]:
    """One row a grid in the cost model's table shape (`sweeps.cost.cost_table` prints them)."""
    out = []
    for grid in dict.fromkeys(r["grid"] for r in rows):
        mine = [r for r in rows if r["grid"] == grid]
        out.append(
            {
                "grid": grid,
                "trials": len(mine),
                "steps/trial": cost.span([r["steps"] for r in mine]),
                "step ms": cost.span([round(r["step_ms"], 1) for r in mine]),
                "evaluations": cost.span([r["evaluations"] for r in mine]),
                "eval hours": f"{sum(r['eval_hours'] for r in mine):,.2f}",
                "GPU-hours": sum(r["gpu_hours"] for r in mine) / packing_speedup,
            }
        )
    return out
