"""The Ray cluster a sweep runs on: connect or start a local Ray, wait for the autoscaler's GPU workers,
and stop before anything starts when the cluster cannot run a single trial."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from sweeps.errors import SweepError
from sweeps.scales import Scale


def start_ray(address: str | None, temp_dir: str | None, log_to_driver: bool = True) -> bool:
    """Connect to the cluster at `address` / $RAY_ADDRESS, else start a local Ray; True if started here."""
    import ray

    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        try:
            ray.init(address=address, log_to_driver=log_to_driver)
        except Exception as err:
            raise SweepError(
                f"cannot connect to the Ray cluster at {address}: {err}. With token authentication, the "
                "cluster's token must be in $RAY_AUTH_TOKEN or ~/.ray/auth_token on this machine."
            ) from err
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": log_to_driver}
    if temp_dir:
        kwargs["_temp_dir"] = str(Path(temp_dir).resolve())
    for attempt in range(3):  # on a loaded machine the raylet can miss Ray's fixed 30 s start-up wait
        try:
            ray.init(**kwargs)
            return True
        except Exception as err:
            if "timed out during startup" not in str(err) or attempt == 2:
                raise
            print(f"local Ray did not start in time ({err}); trying again", file=sys.stderr, flush=True)
            ray.shutdown()
    return True


def wait_for_gpus(needed: float, minutes: float, poll_s: float = 1.0, say_every_s: float = 15.0) -> float:
    """Ask the autoscaler for GPU workers (cluster.yaml scales them from zero) and wait for them to join.

    The request is withdrawn once they are up: from then on the pending trials' own demands keep the
    autoscaler going, and idle workers leave after `idle_timeout_minutes`. Polled every `poll_s` (a node
    joins in seconds once its instance boots), the wait is printed every `say_every_s`."""
    import math

    import ray
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=[{"GPU": 1}] * max(1, math.ceil(needed)))
    start = time.time()
    deadline, said = start + minutes * 60, -math.inf
    try:
        while (gpus := ray.cluster_resources().get("GPU", 0.0)) < needed and time.time() < deadline:
            if time.time() - said >= say_every_s:
                print(f"waiting for GPU workers to join: {gpus:g}/{needed:g} GPUs", flush=True)
                said = time.time()
            time.sleep(poll_s)
    finally:
        request_resources(bundles=[])
    gpus = ray.cluster_resources().get("GPU", 0.0)
    joined = "GPU workers joined" if gpus >= needed else f"only {gpus:g}/{needed:g} GPUs joined"
    print(f"{joined}: {gpus:g} GPUs after {time.time() - start:.0f} s", flush=True)
    return gpus


def check_cluster(scale: Scale, res: dict[str, float], gpu_wait_min: float) -> None:
    """Stop before starting anything when the cluster cannot run a single trial of this sweep."""
    import ray

    total = ray.cluster_resources()
    needs_gpu = scale.needs_gpu or res["gpu"] > 0
    if needs_gpu and total.get("GPU", 0.0) < max(res["gpu"], 1e-9) and gpu_wait_min > 0:
        wait_for_gpus(max(res["gpu"], 1.0), gpu_wait_min)
        total = ray.cluster_resources()  # the GPU workers bring their CPUs (the head offers none)
    gpus, cpus = total.get("GPU", 0.0), total.get("CPU", 0.0)
    if scale.needs_gpu and gpus == 0:
        raise SweepError(
            f"--scale {scale.name} trains the paper's GPT2-small for hundreds of epochs and needs GPUs, but "
            "this Ray cluster has none"
            + (f" (none joined within {gpu_wait_min:g} min)" if gpu_wait_min > 0 else "")
            + ". Run the CPU miniature instead: --scale cpu (or --address a GPU cluster)."
        )
    if res["gpu"] > gpus:
        raise SweepError(
            f"--gpus-per-trial {res['gpu']:g} but the cluster has {gpus:g} GPUs; use 0 or a GPU cluster"
        )
    if res["cpu"] > cpus:
        raise SweepError(f"--cpus-per-trial {res['cpu']:g} but the cluster has {cpus:g} CPUs")
