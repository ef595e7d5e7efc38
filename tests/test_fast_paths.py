"""The paper scale's one-GPU settings compute what the plain trainer computes: bucketed batch shapes,
compiled steps and bf16 autocast, each compared step by step with the plain run's loss curve."""

from __future__ import annotations

import contextlib
import json

import pytest
import torch

import arith.training.train
from arith.config import ExperimentConfig
from arith.tracking.runs import NullTracker
from arith.training.train import train
from sweeps.scales import PAPER_BUCKET_LENGTHS, get_scale

#: bf16 autocast keeps every step's loss within this of fp32's (losses 6.1 -> 2.3 over the run; under 1%);
#: measured on a CPU: at most 0.001 apart, and bucketed batches 1e-6 from unbucketed ones
BF16_TOLERANCE = 0.02
STEPS = 24


class LossCurve(NullTracker):
    """A tracker that keeps the per-step training loss (log_every_steps=1)."""

    def __init__(self) -> None:
        self.losses: dict[int, float] = {}

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        if "train/loss" in metrics:
            self.losses[step] = metrics["train/loss"]


def loss_curve(monkeypatch, **overrides) -> list[float]:
    """Per-step losses of a nano GPT-2 trained STEPS steps on 1-3-digit additions (tracking off)."""
    base = {
        "data.max_digits": 3,
        "data.train_samples": 16 * STEPS,
        "data.test_per_cell": 2,
        "model.preset": "nano",
        "model.n_positions": 64,
        "train.epochs": 1,
        "train.batch_size": 16,
        "train.lr": 3e-3,
        "train.warmup_steps": 4,
        "train.log_every_steps": 1,
        "train.checkpoint_every": 0,
        "train.num_threads": 1,
        "train.device": "cpu",
        "tracking.enabled": False,
    }
    curve = LossCurve()
    monkeypatch.setattr(arith.training.train, "start_tracker", lambda cfg, *args, **kwargs: curve)
    train(ExperimentConfig().with_overrides({**base, **overrides}))
    return [curve.losses[s] for s in sorted(curve.losses)]


def test_paper_scale_turns_the_one_gpu_settings_on() -> None:
    t = get_scale("paper").shrink(ExperimentConfig()).train
    assert t.compile and t.compile_mode == "reduce-overhead" and t.bucket_lengths == PAPER_BUCKET_LENGTHS
    assert ExperimentConfig().train.bucket_lengths == [] and not ExperimentConfig().train.compile


@pytest.mark.parametrize("position", ["learned", "none"])
def test_bucketed_batches_train_the_same_curve(monkeypatch, position) -> None:
    plain = loss_curve(monkeypatch, **{"model.position": position})
    bucketed = loss_curve(monkeypatch, **{"model.position": position, "train.bucket_lengths": [16, 32]})
    assert len(plain) == STEPS
    assert bucketed == pytest.approx(plain, rel=1e-4, abs=1e-5)


def test_bf16_autocast_stays_within_tolerance_of_fp32(monkeypatch) -> None:
    fp32 = loss_curve(monkeypatch, **{"train.precision": "fp32"})
    bf16 = loss_curve(monkeypatch, **{"train.precision": "bf16"})
    assert fp32[-1] < 0.8 * fp32[0]  # it learns, so the comparison covers a moving curve
    assert max(abs(a - b) for a, b in zip(fp32, bf16, strict=True)) < BF16_TOLERANCE


def test_cpu_bf16_runs_its_matmuls_on_fp32_kernels_where_the_cpu_lacks_bf16(monkeypatch) -> None:
    """Without bf16 hardware, bf16 autocast's products run on fp32 kernels and are rounded to bf16: the
    forward and the backward equal the fp32 product of the bf16-rounded operands, bit for bit."""
    import arith.training.hardware as hardware

    cpu = torch.device("cpu")
    monkeypatch.setattr(hardware, "cpu_has_native_bf16", lambda: False)
    autocast = hardware.autocast_context(cpu, "bf16")
    assert isinstance(autocast, hardware.EmulatedBf16Autocast)
    assert hardware.bf16_matmuls(cpu, "bf16") == "fp32 kernels"
    assert hardware.bf16_matmuls(cpu, "fp32") == "none"
    seen: list[str] = []  # the bf16 products the fp32 kernels computed, forward and backward
    dispatch = hardware.Bf16MatmulsInFp32.__torch_dispatch__

    def counted(self, func, types, args=(), kwargs=None):
        if func in hardware._GEMMS and any(getattr(a, "dtype", None) == torch.bfloat16 for a in args):
            seen.append(func.__name__)
        return dispatch(self, func, types, args, kwargs)

    monkeypatch.setattr(hardware.Bf16MatmulsInFp32, "__torch_dispatch__", counted)
    torch.manual_seed(0)
    layer, x = torch.nn.Linear(64, 32), torch.randn(16, 64)
    for _ in range(2):  # reusable, as the trainer enters it once a step
        x.grad = layer.weight.grad = None
        seen.clear()
        with autocast:
            out = layer(x.requires_grad_())
        with hardware.backward_context(autocast):  # the backward runs outside autocast, as train_step's
            out.float().sum().backward()
        assert sorted(seen) == ["addmm.default", "mm.default", "mm.default"]  # forward; grad of x and of W
        w16, x16 = layer.weight.detach().bfloat16(), x.detach().bfloat16()
        expected = torch.addmm(layer.bias.detach().bfloat16().float(), x16.float(), w16.float().T)
        assert out.dtype == torch.bfloat16 and torch.equal(out, expected.bfloat16())
        ones = torch.ones(16, 32, dtype=torch.bfloat16).float()
        assert torch.equal(x.grad, (ones @ w16.float()).bfloat16().float())
    with autocast:  # the mode leaves when the autocast does
        pass
    assert torch.equal(layer(x.detach()), torch.nn.functional.linear(x.detach(), layer.weight, layer.bias))
    monkeypatch.setattr(hardware, "cpu_has_native_bf16", lambda: True)
    native = hardware.autocast_context(cpu, "bf16")
    assert isinstance(native, torch.autocast) and not isinstance(native, hardware.EmulatedBf16Autocast)
    assert hardware.bf16_matmuls(cpu, "bf16") == "native"
    assert isinstance(hardware.backward_context(native), contextlib.nullcontext)
    assert not isinstance(hardware.autocast_context(cpu, "auto"), torch.autocast)


@pytest.mark.parametrize("native", [True, False])
def test_time_to_accuracy_trains_in_bf16_only_where_the_cpu_has_it(monkeypatch, capsys, native) -> None:
    """`bench_train.py tta` runs the recipe in bf16 on a CPU with native bf16, in fp32 on one that would
    emulate it, and its record names the precision it ran; `--set train.precision=...` still wins."""
    import arith.training.hardware
    from benchmarks import bench_train as bench

    for module in (bench, arith.training.hardware):
        monkeypatch.setattr(module, "cpu_has_native_bf16", lambda: native)
    short = ["--device", "cpu", "--set", "train.max_steps=2", "--set", "data.train_samples=128"]
    bench.main(["tta", "--seeds", "0", *short])
    bench.main(["tta", "--seeds", "0", *short, "--set", "train.precision=fp32"])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["precision"] for r in records] == ["bf16" if native else "fp32", "fp32"]
    assert all(r["steps"] == 2 for r in records)


def test_models_are_built_and_loaded_with_the_project_attention(tmp_path) -> None:
    from arith.config import ModelConfig
    from arith.model.attention import ATTENTION
    from arith.model.gpt import build_model, load_folder
    from arith.model.tokenizer import tokenizer_for

    tok = tokenizer_for(ModelConfig(), ["1 + 2 = 3"])
    model = build_model(ModelConfig(preset="nano", n_positions=32), tok)
    assert model.lm.config._attn_implementation == ATTENTION
    model.save(tmp_path / "m")
    assert load_folder(tmp_path / "m").lm.config._attn_implementation == ATTENTION


@pytest.mark.slow
def test_compiled_steps_train_the_same_curve(monkeypatch) -> None:
    """torch.compile on a CPU (Inductor; a minute to compile on 2 cores). CUDA graphs need a GPU: below."""
    eager = loss_curve(monkeypatch)
    compiled = loss_curve(monkeypatch, **{"train.compile": True, "train.bucket_lengths": [16, 32]})
    assert compiled == pytest.approx(eager, rel=1e-3, abs=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_paper_gpu_settings_train_the_same_curve_on_cuda(monkeypatch) -> None:
    """CUDA graphs (reduce-overhead) on fixed bucket shapes with bf16, against the plain fp32 trainer."""
    cuda = {"train.device": "cuda"}
    plain = loss_curve(monkeypatch, **cuda, **{"train.precision": "fp32"})
    paper = {"train.compile": True, "train.compile_mode": "reduce-overhead", "train.precision": "bf16"}
    fast = loss_curve(monkeypatch, **cuda, **paper, **{"train.bucket_lengths": PAPER_BUCKET_LENGTHS})
    assert max(abs(a - b) for a, b in zip(plain, fast, strict=True)) < BF16_TOLERANCE


def test_the_profile_mode_says_where_a_training_step_goes(capsys) -> None:
    """`bench_train.py profile`: one record a preset, its step time split by kind of operator (the shares
    sum to 1, matmuls among them), the speed-up ceiling outside the matmuls, and the model's GFLOP/s beside
    the matmul roofline it measured."""
    from benchmarks import bench_train as bench

    args = ["profile", "--device", "cpu", "--presets", "nano", "--batch-size", "16", "--steps", "2"]
    bench.main([*args, "--warmup", "1", "--set", "train.num_threads=1", "--set", "data.train_samples=64"])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["preset"] for r in records] == ["nano"]
    record = records[0]
    assert abs(sum(record["shares"].values()) - 1) < 0.01
    assert record["shares"]["matmul"] > 0
    # what a change outside the matmuls can give at most: the step reduced to its matrix products
    ceiling = record["ceiling_outside_matmuls"]  # from the unrounded share
    assert ceiling > 1 and ceiling == pytest.approx(1 / record["shares"]["matmul"], rel=0.02)
    assert record["model_gflops"] > 0 and record["roofline_gflops"] > 0
    # measured too: the step's own products replayed alone, each once (a nano GPT-2: per layer 4 linear
    # layers, each one product forward and two backward, and the LM head's three)
    n_layer = ExperimentConfig().with_overrides({"model.preset": "nano"}).model.sizes()[0]
    assert record["products_per_step"] == 12 * n_layer + 3
    assert 0 < record["ms_matmuls_alone"] < record["ms_per_step_unprofiled"]
    assert record["ceiling_matmuls_alone"] == pytest.approx(
        record["ms_per_step_unprofiled"] / record["ms_matmuls_alone"], rel=0.05
    )
    assert record["top"] and all(0 < share <= 1 for _, share, _ in record["top"])
    assert bench.op_kind("aten::addmm") == "matmul" and bench.op_kind("aten::gelu_backward") == "activation"


def test_the_written_out_attentions_softmax_counts_as_attention_in_the_profile() -> None:
    """Its amax, exp, sum and divide (forward and backward) are attention's time, though by name they
    would be "other"; the same operators outside it stay "other"."""
    from torch.profiler import ProfilerActivity, profile

    from arith.model.attention import ShortRowSoftmax
    from benchmarks.bench_train import event_kind

    scores = torch.randn(64, 4, 9, 9, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        ShortRowSoftmax.apply(scores).sum().backward()
        torch.randn(64, 9).exp().amax(-1)
    kinds: dict[str, set[str]] = {}
    for event in prof.events():
        kinds.setdefault(event.name, set()).add(event_kind(event))
    assert kinds["aten::exp_"] == {"attention"} and kinds["aten::amax"] == {"attention", "other"}
    assert kinds["aten::exp"] == {"other"}  # the plain exp outside it
    assert any("ShortRowSoftmaxBackward" in name and k == {"attention"} for name, k in kinds.items())


#: a subprocess: page faults a training step of the tiny model takes, with the trainer's allocator
#: setting or (argv "default") glibc's own
_FAULTS_PER_STEP = """
import resource, statistics, sys
import arith.training.setup as trainer
from arith.config import ExperimentConfig
from arith.training.step import train_step
if sys.argv[1] == "default":  # glibc's initial thresholds, fixed: its dynamic ones drift run to run
    import ctypes, ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    trainer.keep_freed_memory = lambda: bool(libc.mallopt(-3, 128 * 1024) and libc.mallopt(-1, 128 * 1024))
cfg = ExperimentConfig().with_overrides({"data.max_digits": 3, "data.train_samples": 640,
    "data.test_per_cell": 2, "train.batch_size": 64, "train.num_threads": 1, "tracking.enabled": False})
s = trainer.setup(cfg)
batch = next(iter(s.loader.epoch(1)))
faults = []
for _ in range(16):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    train_step(s.step_model, s.optimizer, s.scheduler, batch, cfg.train, s.autocast)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(statistics.median(faults[4:]))
"""


@pytest.mark.skipif(
    __import__("platform").libc_ver()[0] != "glibc", reason="the allocator setting is glibc's"
)
def test_a_cpu_step_reuses_the_memory_the_last_step_freed():
    """glibc hands a step's freed activations back to the kernel and faults them in again the next step
    (the tiny model at batch 64: medians of 226 to 2,833 minor faults a step on the Zen 5 EPYC, gpt2-mini
    at 128 ~12,500); the trainer's setup keeps them in the heap (`keep_freed_memory`: a median of 0-1 once
    it has grown).

    The same batch every step, and the median step after four: a longer batch than any before grows the
    heap and faults its new pages in once (a mean over varied batches read 120 kept against 514 default on
    CI's machine, noise the size of the effect). "default" sets glibc's initial thresholds (128 KiB) by
    hand, which stops glibc raising them as it frees: left dynamic they drifted, one run under load read a
    median of 1 fault a step."""
    import subprocess
    import sys

    def faults_per_step(mode: str) -> float:
        run = subprocess.run(
            [sys.executable, "-c", _FAULTS_PER_STEP, mode], capture_output=True, text=True, check=True
        )
        return float(run.stdout.split()[-1])

    default, kept = faults_per_step("default"), faults_per_step("kept")
    assert kept <= 20  # none once the heap holds the step: the odd page of Python's own
    assert default >= 5 * 20  # glibc at its initial thresholds: a step's activations come back each step
