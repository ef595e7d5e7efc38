"""The Ray cluster a sweep runs on: connect or start a local Ray, wait for the autoscaler's GPU workers,
and stop before anything starts when the cluster cannot run a single trial."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from sweeps.errors import SweepError
from sweeps.scales import get_scale


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


def wait_for_gpus(needed: float, minutes: float) -> float:
    """Ask the autoscaler for GPU workers (cluster.yaml scales them from zero) and wait for them to join.

    The request is withdrawn once they are up: from then on the pending trials' own demands keep the
    autoscaler going, and idle workers leave after `idle_timeout_minutes`."""
    import math

    import ray
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=[{"GPU": 1}] * max(1, math.ceil(needed)))
    deadline = time.time() + minutes * 60
    try:
        while (gpus := ray.cluster_resources().get("GPU", 0.0)) < needed and time.time() < deadline:
            print(f"waiting for GPU workers to join: {gpus:g}/{needed:g} GPUs", flush=True)
            time.sleep(15)
    finally:
        request_resources(bundles=[])
    return ray.cluster_resources().get("GPU", 0.0)


def check_cluster(scale_name: str, res: dict[str, float], gpu_wait_min: float) -> None:
    """Stop before starting anything when the cluster cannot run a single trial of this sweep."""
    import ray

    total = ray.cluster_resources()
    gpus, cpus = total.get("GPU", 0.0), total.get("CPU", 0.0)
    needs_gpu = get_scale(scale_name).needs_gpu or res["gpu"] > 0
    if needs_gpu and gpus < max(res["gpu"], 1e-9) and gpu_wait_min > 0:
        gpus = wait_for_gpus(max(res["gpu"], 1.0), gpu_wait_min)
    if get_scale(scale_name).needs_gpu and gpus == 0:
        raise SweepError(
            f"--scale {scale_name} trains the paper's GPT2-small for hundreds of epochs and needs GPUs, but "
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
