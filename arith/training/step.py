"""One optimiser step of the trainer, and the check of its losses: the benchmarks time this same step, so
what they measure is what a trial runs."""

from __future__ import annotations

import torch

from arith.config import TrainConfig
from arith.training.hardware import backward_context


class NonFiniteLossError(FloatingPointError):
    """The loss became NaN or infinite; the message names the step and epoch."""


def head_on_loss_rows(device: torch.device, t: TrainConfig) -> bool:
    """Whether a step runs the LM head on the loss's columns only: on a CPU, where selecting them is free;
    not on a GPU (a data-dependent shape costs a host sync and breaks CUDA graphs), nor under compile."""
    return device.type == "cpu" and not t.compile


def train_step(step_model, optimizer, scheduler, batch, t: TrainConfig, autocast) -> torch.Tensor:
    """One optimiser step on `batch` (on the device); returns the loss, still on the device (no sync)."""
    with autocast:
        loss = step_model(
            batch.input_ids,
            batch.attention_mask,
            loss_mask=batch.loss_mask,
            logits=not head_on_loss_rows(batch.input_ids.device, t),
        ).loss
    with backward_context(autocast):
        loss.backward()
    if t.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(step_model.parameters(), t.grad_clip)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    # a copy: a CUDA-graph step (compile mode reduce-overhead) reuses its output memory next step
    return loss.detach().clone()


def drain_losses(window: list[torch.Tensor], step: int, epoch: int) -> float:
    """Sum and empty the window of the last steps' losses (to `step`); a NaN or inf one stops training."""
    if not window:
        return 0.0
    losses = torch.stack(window).float().cpu()
    first_step = step - len(window) + 1
    window.clear()
    bad = (~torch.isfinite(losses)).nonzero()
    if len(bad):
        i = int(bad[0])
        raise NonFiniteLossError(
            f"training loss became {float(losses[i])} at step {first_step + i} (epoch {epoch}); "
            "lower train.lr, raise train.warmup_steps or check the data"
        )
    return float(losses.sum())
