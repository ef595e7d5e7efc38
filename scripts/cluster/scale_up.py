"""Bring GPU workers up before a sweep: `python ~/posdesc/scripts/cluster/scale_up.py --gpus 4` on the head.

cluster.yaml's GPU workers scale from zero, and `sweeps/run.py --scale paper` refuses a cluster that has
no GPU yet. This asks Ray's autoscaler for the GPUs (`request_resources`), waits until they have joined,
then withdraws the request: the nodes stay while trials keep them busy, the autoscaler adds more as
pending trials ask (up to max_workers), and idle ones leave after idle_timeout_minutes. `--hold` keeps
the request (and the nodes, and their cost) until `--gpus 0` is run.
"""

from __future__ import annotations

import argparse
import sys
import time

import ray
from ray.autoscaler.sdk import request_resources


def cluster_gpus() -> float:
    return ray.cluster_resources().get("GPU", 0.0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scale_up.py", description=__doc__.split("\n")[0])
    p.add_argument("--gpus", type=int, required=True, help="GPUs to have in the cluster (0 withdraws)")
    p.add_argument("--timeout-min", type=float, default=20.0, help="give up after this many minutes")
    p.add_argument("--hold", action="store_true", help="keep the request after the GPUs are up")
    args = p.parse_args(argv)
    if args.gpus < 0 or args.timeout_min <= 0:
        p.error("--gpus must be >= 0 and --timeout-min > 0")
    ray.init(address="auto", log_to_driver=False)
    if args.gpus == 0:
        request_resources(bundles=[])
        print("scale_up: request withdrawn; idle GPU workers leave after idle_timeout_minutes")
        return 0
    request_resources(bundles=[{"GPU": 1}] * args.gpus)
    deadline = time.time() + args.timeout_min * 60
    while cluster_gpus() < args.gpus:
        if time.time() > deadline:
            request_resources(bundles=[])
            print(
                f"scale_up: only {cluster_gpus():g} of {args.gpus} GPUs after {args.timeout_min:g} min "
                "(spot capacity or quota?); see `ray exec cluster.yaml 'ray status'` and the autoscaler log "
                "(/tmp/ray/session_latest/logs/monitor.*). Request withdrawn.",
                file=sys.stderr,
            )
            return 1
        print(f"scale_up: {cluster_gpus():g}/{args.gpus} GPUs", flush=True)
        time.sleep(15)
    if not args.hold:
        request_resources(bundles=[])
    print(f"scale_up: {cluster_gpus():g} GPUs in the cluster" + (" (held)" if args.hold else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
