"""Trainer benchmarks: time to accuracy, tokens/s and eval samples/s, FLOP/s against a bare PyTorch loop.

    python benchmarks/bench_train.py tta                      # seconds until 95% held-out exact match
    python benchmarks/bench_train.py throughput --presets tiny gpt2-small [--device cuda]
    python benchmarks/bench_train.py profile --presets tiny gpt2-mini   # where a training step's time goes

Every mode accepts `--set key=value` config overrides and prints one JSON line per measurement. Tracking
is off (timings, not bookkeeping; the GPU machine has no mlflow).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from arith.config import ExperimentConfig
from arith.overrides import parse_set
from arith.tracking.schema import BF16_MATMULS_TAG, TEST_ACC_METRIC
from arith.training.batching import BatchLoader
from arith.training.evaluate import evaluate
from arith.training.hardware import (
    autocast_context,
    backward_context,
    bf16_matmuls,
    cpu_has_native_bf16,
    cpu_threads,
    resolve_device,
)
from arith.training.optim import make_optimizer
from arith.training.setup import setup
from arith.training.step import head_on_loss_rows, train_step
from arith.training.train import train
from arith.validation import validate
from benchmarks.products import matmul_roofline_flops, products_alone_seconds, step_products, sync_device

#: peak dense bf16 tensor FLOP/s of the GPUs this project is lent, for MFU
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12}

#: the time-to-accuracy recipe (configs/add3_padding_reverse.yaml); tests/test_learning.py trains it too
TTA_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "add3_padding_reverse.yaml"
TTA = {**ExperimentConfig.load(TTA_CONFIG).flat(), "tracking.enabled": False}


def config(base: dict, overrides: list[str], device: str) -> ExperimentConfig:
    cfg = ExperimentConfig().with_overrides({**base, "train.device": device})
    return validate(cfg.with_overrides(parse_set(overrides)))


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def tta_precision(device: str) -> str:
    """The recipe's precision, except bf16 on a CPU that computes it natively (AVX512-BF16 or AMX): there
    bf16 autocast reaches the target sooner (README, "bf16 on a CPU"); elsewhere on a CPU bf16's products
    run on fp32 kernels (`EmulatedBf16Autocast`), a little slower than fp32, so fp32 stays."""
    if resolve_device(device).type == "cpu" and cpu_has_native_bf16():
        return "bf16"
    return TTA["train.precision"]


def precision_name(device: torch.device, precision: str) -> str:
    """What a training step computes in: bf16 under autocast (however its products run), else fp32."""
    return "fp32" if bf16_matmuls(device, precision) == "none" else "bf16"


def time_to_accuracy(seeds: list[int], sets: list[str], device: str) -> None:
    """Training seconds (and wall seconds, probes and evaluation included) until the probe reaches the
    target; one line per seed."""
    precision = tta_precision(device)
    for seed in seeds:
        base = {**TTA, "train.seed": seed, "data.seed": seed, "train.precision": precision}
        cfg = config(base, sets, device)
        start = time.perf_counter()
        result = train(cfg)
        emit(
            {
                "bench": "time_to_accuracy",
                "seed": seed,
                "precision": precision_name(resolve_device(cfg.train.device), cfg.train.precision),
                "reached": result.stopped == "target_accuracy",
                "train_seconds_to_target": result.seconds_to_target,
                "wall_seconds": round(time.perf_counter() - start, 2),
                "steps": result.steps,
                "epochs": result.epochs_done,
                "tokens_per_s": round(result.tokens_per_s),
                TEST_ACC_METRIC: round(result.test_acc, 4),
                "threads": torch.get_num_threads(),
            }
        )


def model_flops_per_token(model: torch.nn.Module, n_layer: int, n_embd: int, seq_len: float) -> float:
    """Training FLOPs per token (forward + backward): 6 x non-embedding params + attention scores
    (12 x n_layer x n_embd x T, as in the PaLM / nanoGPT estimate)."""
    lm = model.lm
    embedding = lm.transformer.wte.weight.numel() + lm.transformer.wpe.weight.numel()
    params = sum(p.numel() for p in model.parameters()) - embedding
    lm_head = lm.lm_head.weight.numel()  # tied to wte but does a matmul per token
    return 6 * (params + lm_head) + 12 * n_layer * n_embd * seq_len


def prepare(cfg: ExperimentConfig):
    """Model (on its device), tokenizer, batches and test set, built by the trainer's own `setup`."""
    s = setup(cfg)
    return s.model, s.tokenizer, s.loader, s.test_set


def bare_loop_tokens_per_s(cfg: ExperimentConfig, steps: int, warmup: int) -> tuple[float, float]:
    """A bare PyTorch loop (forward, backward, AdamW step) over pre-collated, pre-moved batches of the same
    model and batch size: the upper bound the trainer is compared with. Returns (tokens/s, seq len)."""
    device = resolve_device(cfg.train.device)
    model, _, loader, _ = prepare(cfg)
    model.to(device).train()
    step_model = torch.compile(model) if cfg.train.compile else model
    optimizer = make_optimizer(model, cfg.train, device)
    batches = [b.to(device) for _, b in zip(range(steps + warmup), _cycle(loader), strict=False)]
    autocast = autocast_context(device, cfg.train.precision)
    tokens, start = 0, 0.0
    for i, batch in enumerate(batches):
        if i == warmup:
            sync_device(device)
            start, tokens = time.perf_counter(), 0
        with autocast:
            loss = step_model(
                batch.input_ids,
                batch.attention_mask,
                loss_mask=batch.loss_mask,
                logits=not head_on_loss_rows(device, cfg.train),
            ).loss
        with backward_context(autocast):
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tokens += batch.n_tokens
    sync_device(device)
    seq_len = sum(b.input_ids.shape[1] for b in batches) / len(batches)
    return tokens / (time.perf_counter() - start), seq_len


def trainer_tokens_per_s(cfg: ExperimentConfig, steps: int, warmup: int) -> float:
    """The trainer's own tokens/s over `steps` steps after `warmup` (two runs; the difference cancels
    setup, the warmup steps and the final evaluation). A compiled model is compiled once before them, so
    that neither timed run pays a compile the other finds in inductor's cache (which had made the
    difference negative)."""

    def run(n: int) -> tuple[float, int]:
        result = train(cfg.with_overrides({"train.max_steps": n, "train.epochs": 10_000}))
        return result.train_seconds, result.tokens_per_s * result.train_seconds

    if cfg.train.compile:  # the first compile fills inductor's caches: both timed runs then find them full
        run(warmup)
    short_s, short_tokens = run(warmup)
    long_s, long_tokens = run(warmup + steps)
    if long_s <= short_s:
        raise RuntimeError(
            f"the {warmup + steps}-step run took {long_s:.1f} s, no longer than the {warmup}-step run's "
            f"{short_s:.1f} s: their setup differed by more than {steps} steps cost; raise --steps"
        )
    return (long_tokens - short_tokens) / (long_s - short_s)


def _cycle(loader: BatchLoader):
    epoch = 1
    while True:
        yield from loader.epoch(epoch)
        epoch += 1


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name() if device.type == "cuda" else f"cpu x{torch.get_num_threads()}"


def eval_samples_per_s(cfg: ExperimentConfig) -> float:
    device = resolve_device(cfg.train.device)
    model, tokenizer, _, examples = prepare(cfg)
    model.to(device).eval()
    with autocast_context(device, cfg.train.precision):
        evaluate(
            model, tokenizer, examples[: cfg.train.eval_batch_size], batch_size=cfg.train.eval_batch_size
        )
        return evaluate(model, tokenizer, examples, batch_size=cfg.train.eval_batch_size).samples_per_s


def throughput(
    presets: list[str], batch_size: int, steps: int, warmup: int, sets: list[str], device_name: str
) -> None:
    """Training tokens/s (trainer and bare loop), model FLOP/s, MFU on a GPU, eval samples/s per preset."""
    for preset in presets:
        base = {**TTA, "model.preset": preset, "train.target_accuracy": 0.0, "data.train_samples": 20_000}
        base.update({"train.grad_clip": 1.0, "train.max_steps": 0})  # the trainer's defaults: its full step
        base["train.batch_size"] = batch_size
        cfg = config(base, sets, device_name)
        device = resolve_device(cfg.train.device)
        if device.type == "cpu":
            torch.set_num_threads(cpu_threads(cfg.train.num_threads))
        bare, seq_len = bare_loop_tokens_per_s(cfg, steps, warmup)
        trainer = trainer_tokens_per_s(cfg, steps, warmup)
        model, *_ = prepare(cfg)
        n_layer, _, n_embd = cfg.model.sizes()
        flops = model_flops_per_token(model, n_layer, n_embd, seq_len)
        record = {
            "bench": "throughput",
            "preset": preset,
            "device": torch.cuda.get_device_name()
            if device.type == "cuda"
            else f"cpu x{torch.get_num_threads()}",
            "precision": precision_name(device, cfg.train.precision),
            BF16_MATMULS_TAG: bf16_matmuls(device, cfg.train.precision),
            "batch_size": cfg.train.batch_size,
            "mean_seq_len": round(seq_len, 1),
            "trainer_tokens_per_s": round(trainer),
            "bare_tokens_per_s": round(bare),
            "trainer_tflops": round(trainer * flops / 1e12, 4),
            "bare_tflops": round(bare * flops / 1e12, 4),
            "trainer_vs_bare": round(trainer / bare, 3),
            "eval_samples_per_s": round(eval_samples_per_s(cfg), 1),
        }
        if device.type == "cuda":
            peak = next((v for k, v in PEAK_BF16.items() if k in torch.cuda.get_device_name()), None)
            if peak:
                record["trainer_mfu"] = round(trainer * flops / peak, 4)
        emit(record)


#: operator name fragments -> the share of a step they are counted in (first match wins; the rest: other)
OP_KINDS: dict[str, tuple[str, ...]] = {
    "matmul": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "mkldnn", "aten::linear"),
    "attention": ("scaled_dot_product", "aten::_softmax", "aten::_safe_softmax", "aten::masked_fill"),
    "activation": ("aten::gelu",),
    "casts": ("aten::copy_", "aten::_to_copy", "aten::to"),
    "norm": ("layer_norm",),
    "loss": ("log_softmax", "nll_loss", "cross_entropy"),
    "optimizer": ("lerp", "addcdiv", "aten::sqrt", "_fused_adamw", "_foreach"),
}


#: autograd functions whose whole subtree, forward and backward, is attention (the written-out softmax of
#: `arith.model.attention`: its amax, exp, sum and divide are attention's, not "other")
ATTENTION_SCOPES = ("ShortRowSoftmax",)


def op_kind(name: str) -> str:
    return next((kind for kind, parts in OP_KINDS.items() if any(p in name for p in parts)), "other")


def event_kind(event) -> str:
    """The kind a profiled event's own time counts in: attention inside one of `ATTENTION_SCOPES`, else
    its operator's (`op_kind`)."""
    scope = event
    while scope is not None:
        if any(name in scope.name for name in ATTENTION_SCOPES):
            return "attention"
        scope = scope.cpu_parent
    return op_kind(event.name)


def profile_steps(
    presets: list[str], batch_size: int, steps: int, warmup: int, sets: list[str], device_name: str
):
    """`torch.profiler` over `steps` of the trainer's own `train_step` after `warmup`: the step's time by
    kind of operator (matmul, attention, activation, casts, norm, loss, optimizer, other), the top
    operators, and model GFLOP/s against the matmul roofline measured on the same threads; then the
    step's own matrix products replayed alone beside the same steps unprofiled (`ceiling_matmuls_alone`:
    how much faster a step of nothing but its products would be)."""
    for preset in presets:
        base = {**TTA, "model.preset": preset, "train.target_accuracy": 0.0, "data.train_samples": 20_000}
        base.update({"train.grad_clip": 1.0, "train.max_steps": 0, "train.batch_size": batch_size})
        cfg = config(base, sets, device_name)
        s = setup(cfg)
        batches = [b.to(s.device) for _, b in zip(range(steps + warmup), _cycle(s.loader), strict=False)]
        for batch in batches[:warmup]:
            train_step(s.step_model, s.optimizer, s.scheduler, batch, cfg.train, s.autocast)
        sync_device(s.device)
        start, cpu_start = time.perf_counter(), time.process_time()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for batch in batches[warmup:]:
                train_step(s.step_model, s.optimizer, s.scheduler, batch, cfg.train, s.autocast)
            sync_device(s.device)
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        start = time.perf_counter()
        for batch in batches[warmup:]:
            train_step(s.step_model, s.optimizer, s.scheduler, batch, cfg.train, s.autocast)
        sync_device(s.device)
        unprofiled = time.perf_counter() - start
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as one_step:  # its shapes: slow
            train_step(s.step_model, s.optimizer, s.scheduler, batches[-1], cfg.train, s.autocast)
        products = step_products(one_step.events())
        native = bf16_matmuls(s.device, cfg.train.precision) == "native"
        alone = products_alone_seconds(products, s.device, torch.bfloat16 if native else torch.float32)
        events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
        total = sum(e.self_cpu_time_total for e in events)
        shares: dict[str, float] = {}
        for e in prof.events():
            kind = event_kind(e)  # walks the event's ancestors: once an event
            shares[kind] = shares.get(kind, 0.0) + e.self_cpu_time_total / total
        top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:10]
        tokens = sum(b.n_tokens for b in batches[warmup:])
        seq_len = sum(b.input_ids.shape[1] for b in batches) / len(batches)
        n_layer, _, n_embd = cfg.model.sizes()
        flops = model_flops_per_token(s.model, n_layer, n_embd, seq_len) * tokens / seconds
        precision = precision_name(s.device, cfg.train.precision)
        emit(
            {
                "bench": "profile",
                "preset": preset,
                "device": _device_name(s.device),
                "precision": precision,
                BF16_MATMULS_TAG: bf16_matmuls(s.device, cfg.train.precision),
                "batch_size": batch_size,
                "ms_per_step": round(seconds / steps * 1e3, 1),
                "tokens_per_s": round(tokens / seconds),
                # this process's CPU time: on a busy machine, what the step costs without the waits
                "tokens_per_cpu_s": round(tokens / cpu_seconds),
                "model_gflops": round(flops / 1e9, 1),
                "roofline_gflops": round(matmul_roofline_flops(s.device, cfg.train.precision) / 1e9, 1),
                "shares": {k: round(v, 3) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])},
                # the most any change outside the matrix products can give, their speed kept: the step
                # if nothing but its matmuls remained (near the roofline, only fewer FLOPs go further)
                "ceiling_outside_matmuls": round(1 / shares["matmul"], 2) if shares.get("matmul") else None,
                # the same, measured: the unprofiled steps against their products replayed alone (the
                # profiler's own overhead inflates the non-product shares above)
                "products_per_step": len(products),
                "ms_per_step_unprofiled": round(unprofiled / steps * 1e3, 3),  # a nano step is ~1 ms
                "ms_matmuls_alone": round(alone * 1e3, 3),
                "ceiling_matmuls_alone": round(unprofiled / steps / alone, 2) if alone else None,
                "top": [[e.key, round(e.self_cpu_time_total / total, 3), e.count // steps] for e in top],
            }
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["tta", "throughput", "profile"])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--presets", nargs="+", default=["tiny", "gpt2-small"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)
    if args.mode == "tta":
        time_to_accuracy(args.seeds, args.set, args.device)
    elif args.mode == "profile":
        profile_steps(args.presets, args.batch_size, min(args.steps, 10), args.warmup, args.set, args.device)
    else:
        throughput(args.presets, args.batch_size, args.steps, args.warmup, args.set, args.device)


if __name__ == "__main__":
    main()
