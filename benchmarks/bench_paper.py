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
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from arith.config import ExperimentConfig, parse_set
from arith.data.datasets import test_examples, train_examples, train_size
from arith.model.gpt import build_model
from arith.model.tokenizer import build_tokenizer
from arith.training.batching import EncodedLine, batches_per_epoch, collate, pad_token_id
from arith.training.evaluate import evaluate
from arith.training.train import (
    autocast_context,
    compile_model,
    drain_losses,
    lr_lambda,
    make_optimizer,
    resolve_device,
    seed_everything,
    total_steps,
    train_loader,
    train_step,
)
from arith.validation import validate
from sweeps import cost
from sweeps.grids import points
from sweeps.packing import PackingMeasurement, choose_trials_per_gpu, load_measurement

ROOT = Path(__file__).resolve().parents[1]


#: GPT-2's vocabulary: the pretrained points' embedding and output layer
GPT2_VOCAB = 50257
#: the trainer as it was before the paper scale set its one-GPU switches
BEFORE = {"train.compile": False, "train.bucket_lengths": []}
#: widths measured per model when its points need more distinct ones (eager steps): every 8th, interpolated
WIDTH_STRIDE = 8
MAX_EXACT_WIDTHS = 12
#: the training settings a step's cost depends on (with the model section and the vocabulary)
STEP_KEYS = ("batch_size", "precision", "compile", "compile_mode", "loss_on", "grad_clip", "device")


# ---------------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------------


def bench_config(cfg: ExperimentConfig, mode: str, device: str, preset: str, sets: dict) -> ExperimentConfig:
    """A paper-scale point as the benchmark runs it: this mode's switches, this device, no tracking."""
    over = {"train.device": device, "tracking.enabled": False, "train.checkpoint_every": 0}
    if mode == "before":
        over.update(BEFORE)
    if preset:
        over["model.preset"] = preset
    return validate(cfg.with_overrides({**over, **sets}))


def probe_data(cfg: ExperimentConfig, probe: int):
    """A `probe`-sized slice of the point's training set (every count shrunk alike: the cost model's
    probe, `sweeps.cost`) and its whole test set."""
    small = cost.throughput_config(cfg, probe, 1, cfg.train.batch_size)
    return train_examples(small.data), test_examples(cfg.data)


def model_key(cfg: ExperimentConfig, vocab: int) -> str:
    """What a step's time depends on besides the batch width: the model, its vocabulary, the settings."""
    model = {k: v for k, v in asdict(cfg.model).items() if k != "pretrained"}
    steps = {k: getattr(cfg.train, k) for k in STEP_KEYS}
    return json.dumps({"model": model, "vocab": vocab, "train": steps}, sort_keys=True)


def timing_model(cfg: ExperimentConfig, tokenizer) -> torch.nn.Module:
    """The point's model, or for a pretrained point a random one of GPT-2's size and vocabulary."""
    if cfg.model.init != "pretrained":
        return build_model(cfg.model, tokenizer)
    model = build_model(replace(cfg.model, init="random"), tokenizer)
    if cfg.model.preset == "gpt2-small":  # the paper's stand-in; a smaller preset is a test of the bench
        model.lm.resize_token_embeddings(GPT2_VOCAB, mean_resizing=False)
    return model


def vocab_size(cfg: ExperimentConfig, tokenizer) -> int:
    if cfg.model.init == "pretrained" and cfg.model.preset == "gpt2-small":
        return GPT2_VOCAB
    return len(tokenizer)


# ---------------------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------------------


@dataclass
class PointProfile:
    """One paper point: its schedule and its data's batch widths (from the trainer's loader)."""

    grid: str
    point: str
    cfg: ExperimentConfig
    key: str
    steps: int
    evaluations: int
    width_counts: Counter
    tokens_per_batch: float
    test_size: int
    eval_key: str


@dataclass
class ModelTiming:
    """The trainer's step time on one model at each measured batch width."""

    widths: list[int]
    step_seconds: list[float]
    #: one-off seconds before timing: compilation and CUDA-graph recording included
    warmup_seconds: float
    peak_memory_bytes: int | None
    eval_seconds: dict[str, float] = field(default_factory=dict)

    def at(self, width: float) -> float:
        return float(np.interp(width, self.widths, self.step_seconds))


def profile_points(grids: list[str], args: argparse.Namespace, sets: dict) -> tuple[list[PointProfile], dict]:
    """Every point of `grids` at scale paper, with its data's widths; one tokenizer and probe per key."""
    profiles, context = [], {}
    for grid in grids:
        for paper_cfg in points(grid, "paper", seeds=args.seeds):
            cfg = bench_config(paper_cfg, args.mode, args.device, args.preset, sets)
            train_set, test_set = probe_data(cfg, args.probe)
            tokenizer = build_tokenizer(e.text for e in train_set)
            t = cfg.train
            loader = train_loader(train_set, tokenizer, t)
            widths, tokens = Counter(), []
            for batch in loader.epoch(1):
                widths[batch.input_ids.shape[1]] += 1
                tokens.append(batch.n_tokens)
            key = model_key(cfg, vocab_size(cfg, tokenizer))
            eval_key = json.dumps([asdict(cfg.data) | {"seed": 0}, key], sort_keys=True)
            context.setdefault(key, (cfg, tokenizer, {}))[2].setdefault(eval_key, test_set)
            profiles.append(
                PointProfile(
                    grid=grid,
                    point=cfg.tracking.tags["point"] + f",seed={cfg.train.seed}",
                    cfg=cfg,
                    key=key,
                    steps=total_steps(t, batches_per_epoch(train_size(cfg.data), t.batch_size)),
                    evaluations=len({*t.eval_epochs, t.epochs}),
                    width_counts=widths,
                    tokens_per_batch=float(np.mean(tokens)),
                    test_size=len(test_set),
                    eval_key=eval_key,
                )
            )
    return profiles, context


def widths_to_measure(needed: set[int]) -> list[int]:
    """The needed widths themselves when they are few (bucketed batches), else every WIDTH_STRIDE-th."""
    if len(needed) <= MAX_EXACT_WIDTHS:
        return sorted(needed)
    low, high = min(needed), max(needed)
    return sorted({low, high, *range(-(-low // WIDTH_STRIDE) * WIDTH_STRIDE, high, WIDTH_STRIDE)})


def synthetic_batch(rows: int, width: int, vocab: int, pad_id: int, loss_on: str, seed: int):
    """A batch of `rows` lines of `width` tokens through the trainer's collate: a step costs what its
    shape costs, whatever the tokens are."""
    rng = np.random.default_rng(seed)
    lines = [
        EncodedLine(tuple(int(x) for x in rng.integers(0, vocab, width)), width // 2) for _ in range(rows)
    ]
    return collate(lines, pad_id, loss_on)


def timed_steps(step_model, optimizer, scheduler, cfg, device, batches: list) -> float:
    """Wall seconds of the trainer's training loop over `batches` (device work finished)."""
    t, autocast = cfg.train, autocast_context(device, cfg.train.precision)
    start = time.perf_counter()
    window: list[torch.Tensor] = []
    for step, batch in enumerate(batches, 1):  # the trainer's loop: its step, its loss read-back
        window.append(train_step(step_model, optimizer, scheduler, batch.to(device), t, autocast))
        if device.type == "cpu" or len(window) >= t.log_every_steps:
            drain_losses(window, step, 1)
    drain_losses(window, len(batches), 1)
    _sync(device)
    return time.perf_counter() - start


def trainer_state(cfg: ExperimentConfig, tokenizer, device: torch.device):
    """Model, step module, optimizer and schedule as the trainer builds them."""
    seed_everything(cfg.train.seed)
    model = timing_model(cfg, tokenizer).to(device)
    model.train()
    model.new_epoch(1)
    optimizer = make_optimizer(model, cfg.train, device)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(cfg.train, 10**9))
    return model, compile_model(model, cfg.train), optimizer, scheduler


def time_model(
    cfg: ExperimentConfig, tokenizer, widths: list[int], steps: int, warmup: int, device: torch.device
) -> tuple[ModelTiming, torch.nn.Module]:
    """The trainer's step time at each width, after `warmup` steps at every width (compilation, graphs)."""
    torch._dynamo.reset()  # each model compiles afresh, as in its own trial
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    model, step_model, optimizer, scheduler = trainer_state(cfg, tokenizer, device)
    vocab, pad = vocab_size(cfg, tokenizer), pad_token_id(tokenizer)
    batches = {w: synthetic_batch(cfg.train.batch_size, w, vocab, pad, cfg.train.loss_on, w) for w in widths}
    warm = sum(
        timed_steps(step_model, optimizer, scheduler, cfg, device, [b] * warmup) for b in batches.values()
    )
    seconds = [
        timed_steps(step_model, optimizer, scheduler, cfg, device, [batches[w]] * steps) / steps
        for w in widths
    ]
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return ModelTiming(widths, seconds, warm, peak), model


def eval_seconds(cfg: ExperimentConfig, model, tokenizer, examples: list, samples: int, device) -> float:
    """Seconds of the trainer's evaluation of the whole test set, from an evenly spread slice of it."""
    picked = examples[:: max(1, len(examples) // samples)][:samples]
    start = time.perf_counter()
    with autocast_context(device, cfg.train.precision):
        evaluate(model, tokenizer, picked, batch_size=cfg.train.eval_batch_size, seed=cfg.train.seed)
    _sync(device)
    return (time.perf_counter() - start) * len(examples) / len(picked)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------


def point_rows(profiles: list[PointProfile], timings: dict[str, ModelTiming]) -> list[dict]:
    rows = []
    for p in profiles:
        timing = timings[p.key]
        counts = sum(p.width_counts.values())
        step_s = sum(n * timing.at(w) for w, n in p.width_counts.items()) / counts
        train_h = p.steps * step_s / 3600
        eval_h = p.evaluations * timing.eval_seconds[p.eval_key] / 3600
        rows.append(
            {
                "grid": p.grid,
                "point": p.point,
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
                "gpu_hours": train_h + eval_h + timing.warmup_seconds / 3600,
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


def worker_instance() -> str:
    """The cluster's GPU worker instance type (cluster.yaml), which the price is of."""
    import yaml

    spec = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    return spec["available_node_types"]["gpu_worker"]["node_config"]["InstanceType"]


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def table(args: argparse.Namespace) -> int:
    sets = parse_set(args.set)
    device = resolve_device(args.device)
    grids = [g for g in args.grids.split(",") if g] or cost.PAPER_GRIDS
    started = time.perf_counter()
    profiles, context = profile_points(grids, args, sets)
    timings: dict[str, ModelTiming] = {}
    for key, (cfg, tokenizer, test_sets) in context.items():
        needed = {w for p in profiles if p.key == key for w in p.width_counts}
        timing, model = time_model(cfg, tokenizer, widths_to_measure(needed), args.steps, args.warmup, device)
        for eval_key, examples in test_sets.items():
            timing.eval_seconds[eval_key] = eval_seconds(
                cfg, model, tokenizer, examples, args.eval_samples, device
            )
        timings[key] = timing
        print(
            f"timed model {len(timings)}/{len(context)}: widths {timing.widths}", file=sys.stderr, flush=True
        )
    packing = load_measurement(args.packing) if args.packing else None
    trials_per_gpu = choose_trials_per_gpu(packing) if packing else 1
    speedup = packing.speedup(trials_per_gpu) if packing else 1.0
    rows = point_rows(profiles, timings)
    per_grid = grid_rows(rows, speedup)
    total = sum(r["GPU-hours"] for r in per_grid)
    name = device_name(device)
    head = (
        f"Measured on {name} ({args.mode}, {args.preset or 'paper models'}, {args.steps} steps a width, "
        f"{args.seeds} seed(s)); {trials_per_gpu} trial(s) per GPU"
        + (f" (aggregate speedup {speedup:.2f}x from {args.packing})" if packing else "")
        + f"; price: {worker_instance()} at USD {args.usd_per_gpu_hour:g}/GPU-hour"
        + (" (none given)" if not args.usd_per_gpu_hour else "")
        + "."
    )
    text = head + "\n\n" + cost.cost_table(per_grid, args.usd_per_gpu_hour)
    print(text)
    result = {
        "device": name,
        "mode": args.mode,
        "preset": args.preset or "paper",
        "steps_per_width": args.steps,
        "seeds": args.seeds,
        "trials_per_gpu": trials_per_gpu,
        "packing_speedup": speedup,
        "usd_per_gpu_hour": args.usd_per_gpu_hour,
        "instance": worker_instance(),
        "gpu_hours": total,
        "usd": total * args.usd_per_gpu_hour,
        "grids": per_grid,
        "points": rows,
        "models": [{"key": json.loads(k), **asdict(t)} for k, t in timings.items()],
        "bench_seconds": round(time.perf_counter() - started, 1),
    }
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"paper_gpu_hours_{args.mode}.md").write_text(text + "\n")
        (out / f"paper_gpu_hours_{args.mode}.json").write_text(json.dumps(result, indent=1, default=str))
    return 0


# ---------------------------------------------------------------------------------------------------------
# One point's real batches, and trials side by side
# ---------------------------------------------------------------------------------------------------------


def step(args: argparse.Namespace) -> int:
    """The trainer's step time on one point's own batches (first point of --grid containing --match)."""
    sets = parse_set(args.set)
    if args.batch_size:
        sets["train.batch_size"] = str(args.batch_size)
    device = resolve_device(args.device)
    candidates = points(args.grid, "paper")
    paper_cfg = next((c for c in candidates if args.match in c.tracking.tags["point"]), candidates[0])
    cfg = bench_config(paper_cfg, args.mode, args.device, args.preset, sets)
    train_set, _ = probe_data(cfg, args.probe)
    tokenizer = build_tokenizer(e.text for e in train_set)
    t = cfg.train
    loader = train_loader(train_set, tokenizer, t)
    epoch, batches = 1, []
    while len(batches) < args.steps:
        batches.extend(loader.epoch(epoch))
        epoch += 1
    batches = batches[: args.steps]
    by_shape: dict[tuple, list] = {}
    for b in batches:
        by_shape.setdefault(tuple(b.input_ids.shape), []).append(b)
    warm_batches = [b for group in by_shape.values() for b in (group * args.warmup)[: args.warmup]]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    _, step_model, optimizer, scheduler = trainer_state(cfg, tokenizer, device)
    warm = timed_steps(step_model, optimizer, scheduler, cfg, device, warm_batches)
    if args.barrier:
        _wait_for_peers(Path(args.barrier), args.procs)
    seconds = timed_steps(step_model, optimizer, scheduler, cfg, device, batches)
    record = {
        "device": device_name(device),
        "mode": args.mode,
        "grid": args.grid,
        "point": cfg.tracking.tags["point"],
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


def pack(args: argparse.Namespace) -> int:
    """`step` in 1, 2, 4... processes at once on one device; their aggregate steps/s and one's memory."""
    import tempfile

    counts = [int(k) for k in args.trials.split(",")]
    if 1 not in counts:
        counts.insert(0, 1)
    forwarded = [a for a in args.step_args if a != "--"]
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
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu_packing.json").write_text(measurement.to_json() + "\n")
        (out / "gpu_packing_runs.json").write_text(json.dumps(runs, indent=1))
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
    t.add_argument("--grids", default="", help=f"comma-separated (default: {','.join(cost.PAPER_GRIDS)})")
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
    return {"table": table, "step": step, "pack": pack}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
