"""Evaluation throughput: the evaluator's batched KV-cache greedy decoding vs `generate` per sample.

Both decode the same prompts with the same model (transformers' GPT-2 inside an ArithModel, learned
positions so that `generate` sees the model the evaluator does) to the same token budget.

    .venv/bin/python benchmarks/bench_eval.py                      # tiny model, CPU
    .venv/bin/python benchmarks/bench_eval.py --preset gpt2-small --device cuda
"""

from __future__ import annotations

import argparse
import time
from contextlib import nullcontext

import torch

from arith.config import MODEL_PRESETS, DataConfig, ModelConfig
from arith.data.datasets import test_examples
from arith.model.gpt import build_model
from arith.model.tokenizer import build_tokenizer
from arith.training.decoding import ANSWER_MARGIN, generate_answers, left_pad


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="tiny", choices=list(MODEL_PRESETS))
    parser.add_argument("--samples", type=int, default=1000, help="prompts for the batched evaluator")
    parser.add_argument("--per-sample", type=int, default=100, help="prompts for generate() one at a time")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--max-digits", type=int, default=5, help="add/padding_reverse operands up to this")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"], help="bf16: autocast (CUDA)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    tokenizer = build_tokenizer()
    torch.manual_seed(0)
    model = build_model(ModelConfig(preset=args.preset, position="learned"), tokenizer).to(device).eval()
    per_cell = -(-args.samples // args.max_digits)
    data = DataConfig(
        task="add", format="padding_reverse", max_digits=args.max_digits, test_per_cell=per_cell
    )
    examples = test_examples(data)[: args.samples]

    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16) if args.precision == "bf16" else nullcontext()
    )
    with autocast:
        batched, one_by_one, budget = decoding_rates(
            model, tokenizer, examples, args.batch_size, args.per_sample, device
        )
    print(
        f"device={device} preset={args.preset} precision={args.precision} threads={torch.get_num_threads()}"
    )
    print(f"batched KV-cache evaluator: {batched:9.1f} samples/s ({len(examples)} samples)")
    print(f"generate() per sample:      {one_by_one:9.1f} samples/s ({args.per_sample} samples)")
    print(f"speed-up: {batched / one_by_one:.1f}x  (decoding budget {budget} tokens)")


def decoding_rates(
    model, tokenizer, examples, batch_size: int, per_sample: int, device: torch.device
) -> tuple[float, float, int]:
    """(evaluator samples/s, generate-per-sample samples/s, token budget) on the same prompts."""
    budget = (
        max(len(tokenizer.encode(e.answer, add_special_tokens=False)) + 1 for e in examples) + ANSWER_MARGIN
    )
    generate_answers(model, tokenizer, examples[:batch_size], batch_size=batch_size)  # warm-up
    sync(device)
    start = time.perf_counter()
    generate_answers(model, tokenizer, examples, batch_size=batch_size)
    sync(device)
    batched = len(examples) / (time.perf_counter() - start)

    singles = examples[:per_sample]
    start = time.perf_counter()
    for example in singles:
        ids, mask = left_pad(
            [tokenizer.encode(" " + example.prompt, add_special_tokens=False)], tokenizer.pad_token_id
        )
        out = model.lm.generate(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            max_new_tokens=budget,
            do_sample=False,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        tokenizer.decode(out[0, ids.shape[1] :].tolist(), skip_special_tokens=True)
    sync(device)
    one_by_one = len(singles) / (time.perf_counter() - start)
    return batched, one_by_one, budget


if __name__ == "__main__":
    main()
