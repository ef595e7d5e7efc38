"""How long the data layer takes to build the paper's training sets (the target: 300k `mul` lines < 5 s).

    .venv/bin/python benchmarks/bench_data.py [--repeat 3]

Prints one line per dataset: the best of `--repeat` wall-clock times, the process CPU time of that run
(the cost on an idle core, when other jobs share the machine) and lines per wall-clock second.
"""

from __future__ import annotations

import argparse
import time

from arith.config import DataConfig
from arith.data.datasets import train_examples
from arith.model.tokenizer import build_tokenizer, encode_example, encode_examples

CASES = {
    "mul basic n=5, 300k": DataConfig(task="mul", format="basic", max_digits=5, train_samples=300_000),
    "mul padding_reverse n=10 first_step, 300k": DataConfig(
        task="mul", format="padding_reverse", max_digits=10, augment="first_step", train_samples=300_000
    ),
    "mul padding_reverse n=20, 300k": DataConfig(
        task="mul", format="padding_reverse", max_digits=20, train_samples=300_000
    ),
    "add padding_reverse n=3, 120k": DataConfig(task="add", format="padding_reverse", train_samples=120_000),
    "add_scratchpad random_space 2..10, 120k": DataConfig(
        task="add_scratchpad", format="random_space", min_digits=2, max_digits=10, train_samples=120_000
    ),
    "add_scratchpad recursive 2..10, 120k": DataConfig(
        task="add_scratchpad",
        format="recursive_scratchpad",
        min_digits=2,
        max_digits=10,
        train_samples=120_000,
    ),
    "dialogue + random_space mix (13,240 + 120k)": DataConfig(
        task="dialogue", format="basic", mix_format="random_space"
    ),
}


def best_time(fn, repeat: int) -> tuple[float, float, object]:
    """(best wall seconds, CPU seconds of that run, result)."""
    best, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall = time.perf_counter() - start
        if wall < best:
            best, cpu = wall, time.process_time() - start_cpu
    return best, cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for name, cfg in CASES.items():
        seconds, cpu, examples = best_time(lambda cfg=cfg: train_examples(cfg), args.repeat)
        print(f"{name:48s} {seconds:6.2f} s wall {cpu:6.2f} s cpu {len(examples) / seconds:10,.0f} lines/s")
    examples = train_examples(
        DataConfig(task="mul", format="padding_reverse", max_digits=5, train_samples=30_000)
    )
    tokenizer = build_tokenizer()
    for name, fn in {
        "encode_example, mul padding_reverse n=5, 30k": lambda: [
            encode_example(tokenizer, e) for e in examples
        ],
        "encode_examples (batched), same 30k": lambda: encode_examples(tokenizer, examples),
    }.items():
        seconds, cpu, _ = best_time(fn, args.repeat)
        print(f"{name:48s} {seconds:6.2f} s wall {cpu:6.2f} s cpu {len(examples) / seconds:10,.0f} lines/s")


if __name__ == "__main__":
    main()
