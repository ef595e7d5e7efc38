"""What the paper's reproduction costs on this device: every paper-scale trial's measured step time and
evaluation time, extrapolated to its whole schedule and summed into GPU-hours.

    python benchmarks/bench_paper.py table [--mode before|after] [--steps 100] [--out DIR]
    python benchmarks/bench_paper.py step --grid mul_format --match padding_reverse,max_digits=10
    python benchmarks/bench_paper.py pack --trials 1,2,4 --out DIR      # trials side by side, one GPU
    python benchmarks/bench_paper.py table --device cpu --preset tiny   # a test of the benchmark, not a cost

`table`: for every point of the seven paper grids at scale `paper` (sweeps.grids), its data's batch widths
come from a probe of its own training set, batched by the trainer's loader (arith.training.batching); the
trainer's own step (arith.training.train: model, optimizer, compile, autocast, the training loop) is timed at
each width on its model (dimensions, position scheme, vocabulary), batch size and precision, and the point's
step time is the mean over its widths. Steps = batches an epoch x epochs; evaluations = the evaluated epochs x
the time of the trainer's evaluation on a slice of the point's test set (an untrained model decodes to the
longest answer + margin: an upper bound). Points that share a model and batch share their timings, so the
whole paper is a few models x a few widths. GPU-hours are summed per grid and for the paper, and cost at
`--usd-per-gpu-hour` of the cluster's worker (cluster.yaml).

`--mode before` is the trainer as it was (eager steps, batches padded to their longest line); `--mode
after` is the paper scale as it is now (fixed bucket widths, CUDA graphs through torch.compile's
reduce-overhead) and, with `--packing FILE` (written by `pack`), several trials per GPU.

Pretrained points are timed on a randomly initialised GPT-2 of GPT-2's own size and vocabulary (the hub
is not needed and the step costs the same). Neither Ray nor MLflow is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from arith.model.tokenizer import build_tokenizer
from arith.overrides import parse_set
from arith.tracking.schema import POINT_TAG
from arith.training.hardware import resolve_device
from arith.training.setup import train_loader
from benchmarks.paper_rows import grid_rows, point_rows
from sweeps import cost
from sweeps.grids import points
from sweeps.packing import PackingMeasurement, choose_trials_per_gpu, load_measurement
from sweeps.timing import (
    ModelTiming,
    bench_config,
    eval_seconds,
    probe_data,
    profile_points,
    time_model,
    timed_steps,
    trainer_state,
    widths_to_measure,
)

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class BenchSetup:
    """The options every command shares (`--mode`, `--device`, `--preset`, `--probe`, `--warmup`, `--set`),
    read by `main` and handed to the commands as values."""

    mode: str = "after"
    device: str = "auto"
    preset: str = ""
    probe: int = 4000
    warmup: int = 3
    sets: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------


def worker_instance() -> str:
    """The cluster's GPU worker instance type (cluster.yaml), which the price is of."""
    import yaml

    spec = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    return spec["available_node_types"]["gpu_worker"]["node_config"]["InstanceType"]


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def table(
    setup: BenchSetup,
    grids: list[str],
    steps: int = 100,
    eval_samples: int = 256,
    seeds: int = 1,
    packing_file: str = "",
    usd_per_gpu_hour: float = 0.0,
    out: str = "",
) -> int:
    """GPU-hours of `grids` (default: the paper's) on this device, printed and written to `out`."""
    sets = parse_set(list(setup.sets))
    device = resolve_device(setup.device)
    grids = grids or cost.paper_grids()
    started = time.perf_counter()
    profiles, context = profile_points(
        grids, seeds, setup.mode, setup.device, setup.preset, setup.probe, sets
    )
    timings: dict[str, ModelTiming] = {}
    for key, (cfg, tokenizer, test_sets) in context.items():
        needed = {w for p in profiles if p.key == key for w in p.width_counts}
        timing, model = time_model(cfg, tokenizer, widths_to_measure(needed), steps, setup.warmup, device)
        for eval_key, examples in test_sets.items():
            timing.eval_seconds[eval_key] = eval_seconds(
                cfg, model, tokenizer, examples, eval_samples, device
            )
        timings[key] = timing
        print(
            f"timed model {len(timings)}/{len(context)}: widths {timing.widths}", file=sys.stderr, flush=True
        )
    packing = load_measurement(packing_file) if packing_file else None
    trials_per_gpu = choose_trials_per_gpu(packing) if packing else 1
    speedup = packing.speedup(trials_per_gpu) if packing else 1.0
    rows = point_rows(profiles, timings)
    per_grid = grid_rows(rows, speedup)
    total = sum(r["GPU-hours"] for r in per_grid)
    name = device_name(device)
    head = (
        f"Measured on {name} ({setup.mode}, {setup.preset or 'paper models'}, {steps} steps a width, "
        f"{seeds} seed(s)); {trials_per_gpu} trial(s) per GPU"
        + (f" (aggregate speedup {speedup:.2f}x from {packing_file})" if packing else "")
        + f"; price: {worker_instance()} at USD {usd_per_gpu_hour:g}/GPU-hour"
        + (" (none given)" if not usd_per_gpu_hour else "")
        + "."
    )
    text = head + "\n\n" + cost.cost_table(per_grid, usd_per_gpu_hour)
    print(text)
    result = {
        "device": name,
        "mode": setup.mode,
        "preset": setup.preset or "paper",
        "steps_per_width": steps,
        "seeds": seeds,
        "trials_per_gpu": trials_per_gpu,
        "packing_speedup": speedup,
        "usd_per_gpu_hour": usd_per_gpu_hour,
        "instance": worker_instance(),
        "gpu_hours": total,
        "usd": total * usd_per_gpu_hour,
        "grids": per_grid,
        "points": rows,
        "models": [{"key": json.loads(k), **asdict(t)} for k, t in timings.items()],
        "bench_seconds": round(time.perf_counter() - started, 1),
    }
    if out:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"paper_gpu_hours_{setup.mode}.md").write_text(text + "\n")
        (folder / f"paper_gpu_hours_{setup.mode}.json").write_text(json.dumps(result, indent=1, default=str))
    return 0


# ---------------------------------------------------------------------------------------------------------
# One point's real batches, and trials side by side
# ---------------------------------------------------------------------------------------------------------


def step(
    setup: BenchSetup,
    grid: str = "mul_format",
    match: str = "padding_reverse,max_digits=10",
    batch_size: int = 0,
    steps: int = 300,
    barrier: str = "",
    procs: int = 1,
) -> int:
    """The trainer's step time on one point's own batches (first point of --grid containing --match)."""
    sets = parse_set(list(setup.sets))
    if batch_size:
        sets["train.batch_size"] = str(batch_size)
    device = resolve_device(setup.device)
    candidates = points(grid, "paper")
    paper_cfg = next((c for c in candidates if match in c.tracking.tags[POINT_TAG]), candidates[0])
    cfg = bench_config(paper_cfg, setup.mode, setup.device, setup.preset, sets)
    train_set, _ = probe_data(cfg, setup.probe)
    tokenizer = build_tokenizer(e.text for e in train_set)
    t = cfg.train
    loader = train_loader(train_set, tokenizer, t)
    epoch, batches = 1, []
    while len(batches) < steps:
        batches.extend(loader.epoch(epoch))
        epoch += 1
    batches = batches[:steps]
    by_shape: dict[tuple, list] = {}
    for b in batches:
        by_shape.setdefault(tuple(b.input_ids.shape), []).append(b)
    warm_batches = [b for group in by_shape.values() for b in (group * setup.warmup)[: setup.warmup]]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    _, step_model, optimizer, scheduler = trainer_state(cfg, tokenizer, device)
    warm = timed_steps(step_model, optimizer, scheduler, cfg, device, warm_batches)
    if barrier:
        _wait_for_peers(Path(barrier), procs)
    seconds = timed_steps(step_model, optimizer, scheduler, cfg, device, batches)
    record = {
        "device": device_name(device),
        "mode": setup.mode,
        "grid": grid,
        POINT_TAG: cfg.tracking.tags[POINT_TAG],
        "preset": cfg.model.preset,
        "batch_size": t.batch_size,
        "precision": t.precision,
        "steps": len(batches),
        "shapes": len(by_shape),
        "warmup_s": round(warm, 2),
        "seconds": round(seconds, 3),
        "step_ms": round(1e3 * seconds / len(batches), 3),
        "steps_per_s": len(batches) / seconds,
        "tokens_per_s": round(sum(b.n_tokens for b in batches) / seconds),
        **memory(device),
    }
    print(json.dumps(record), flush=True)
    return 0


def memory(device: torch.device) -> dict:
    """This process's memory: on a GPU what the device lost to it (context and allocator reserve
    included, when it is alone there) and the device's size; on a CPU its peak resident size."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        return {
            "peak_allocated_bytes": torch.cuda.max_memory_allocated(device),
            "process_memory_bytes": total - free,
            "device_memory_bytes": total,
        }
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "peak_allocated_bytes": rss,
        "process_memory_bytes": rss,
        "device_memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
    }


def _wait_for_peers(directory: Path, procs: int, timeout: float = 600.0) -> None:
    """Start timing together: each process marks itself ready and waits for the others (compiling first
    would otherwise overlap with a peer's timed steps)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"ready.{os.getpid()}").touch()
    deadline = time.monotonic() + timeout
    while len(list(directory.glob("ready.*"))) < procs:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(list(directory.glob('ready.*')))} of {procs} peers got ready")
        time.sleep(0.05)


def pack(trials: str = "1,2,4", out: str = "", step_args: list[str] | tuple[str, ...] = ()) -> int:
    """`step` in 1, 2, 4... processes at once on one device; their aggregate steps/s and one's memory."""
    import tempfile

    counts = [int(k) for k in trials.split(",")]
    if 1 not in counts:
        counts.insert(0, 1)
    forwarded = [a for a in step_args if a != "--"]
    steps_per_s, runs = {}, {}
    for k in counts:
        with tempfile.TemporaryDirectory(prefix="bench-pack-") as barrier:
            command = [sys.executable, __file__, "step", "--barrier", barrier, "--procs", str(k), *forwarded]
            procs = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(k)]
            outputs = [p.communicate()[0] for p in procs]
        if any(p.returncode for p in procs):
            raise RuntimeError(f"a packed step process failed (trials={k})")
        records = [json.loads(o.strip().splitlines()[-1]) for o in outputs]
        runs[k] = records
        steps_per_s[k] = sum(r["steps_per_s"] for r in records)
        print(json.dumps({"trials": k, "aggregate_steps_per_s": round(steps_per_s[k], 2),
                          "step_ms": [r["step_ms"] for r in records]}), flush=True)  # fmt: skip
    alone = runs[1][0]
    measurement = PackingMeasurement(
        device=alone["device"],
        device_memory_bytes=alone["device_memory_bytes"],
        trial_memory_bytes=alone["process_memory_bytes"],
        steps_per_s=steps_per_s,
    )
    chosen = choose_trials_per_gpu(measurement)
    print(f"chosen: {chosen} trial(s) per GPU (--gpus-per-trial {1 / chosen:g})", flush=True)
    if out:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "gpu_packing.json").write_text(measurement.to_json() + "\n")
        (folder / "gpu_packing_runs.json").write_text(json.dumps(runs, indent=1))
    return 0


# ---------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=("before", "after"), default="after")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument(
        "--preset", default="", help="another model preset (tiny: a test of the bench, not a cost)"
    )
    p.add_argument("--probe", type=int, default=4000, help="training lines generated per point")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per width/shape first")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/bench_paper.py", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("table", help="GPU-hours of the paper's grids")
    _common(t)
    t.add_argument("--grids", default="", help=f"comma-separated (default: {','.join(cost.paper_grids())})")
    t.add_argument("--steps", type=int, default=100, help="timed steps per model and width")
    t.add_argument("--eval-samples", type=int, default=256, help="test examples timed per test set")
    t.add_argument("--seeds", type=int, default=1)
    t.add_argument("--packing", default="", help="a gpu_packing.json from `pack` (after mode)")
    t.add_argument("--usd-per-gpu-hour", type=float, default=0.0)
    t.add_argument("--out", default="", help="folder for paper_gpu_hours_<mode>.md/.json")
    s = sub.add_parser("step", help="step time on one point's own batches")
    _common(s)
    s.add_argument("--grid", default="mul_format")
    s.add_argument("--match", default="padding_reverse,max_digits=10", help="first point containing this")
    s.add_argument("--batch-size", type=int, default=0, help="0 = the point's")
    s.add_argument("--steps", type=int, default=300)
    s.add_argument("--barrier", default="", help=argparse.SUPPRESS)
    s.add_argument("--procs", type=int, default=1, help=argparse.SUPPRESS)
    k = sub.add_parser("pack", help="aggregate throughput of trials side by side (runs `step` N times)")
    k.add_argument("--trials", default="1,2,4")
    k.add_argument("--out", default="")
    k.add_argument("step_args", nargs=argparse.REMAINDER, help="after --: the step command's options")
    args = parser.parse_args(argv)
    if args.command == "pack":
        return pack(args.trials, args.out, args.step_args)
    setup = BenchSetup(args.mode, args.device, args.preset, args.probe, args.warmup, tuple(args.set))
    if args.command == "step":
        return step(setup, args.grid, args.match, args.batch_size, args.steps, args.barrier, args.procs)
    grids = [g for g in args.grids.split(",") if g]
    return table(
        setup, grids, args.steps, args.eval_samples, args.seeds, args.packing, args.usd_per_gpu_hour, args.out
    )


if __name__ == "__main__":
    sys.exit(main())
