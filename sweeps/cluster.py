"""The Ray cluster a sweep runs on: connect or start a local Ray, wait for the autoscaler's GPU workers,
and stop before anything starts when the cluster cannot run a single trial.

A local Ray outlives a driver killed with SIGKILL (its agents ignore SIGTERM). So a driver that starts one
notes it in Ray's temp folder (`posdesc-driver-<pid>.json`), and the next sweep started with the same temp
folder first stops the processes of every noted session whose driver is gone, and no other Ray (no `ray
stop`). By hand: `python -m sweeps.cluster stop-stale [--ray-temp-dir DIR]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from arith.config import ExperimentConfig
from arith.training.hardware import bf16_matmuls
from sweeps.errors import SweepError
from sweeps.scales import Scale


def emulated_bf16_note(
    configs: Mapping[str, ExperimentConfig], gpus_per_trial: float, address: str | None
) -> str | None:
    """A note where bf16 trials run on a local CPU without bf16 hardware (their minutes buy less)."""
    if gpus_per_trial or ray_address(address):
        return None
    cpu = torch.device("cpu")  # as the trials will record it (their bf16_matmuls tag)
    bf16 = sum(bf16_matmuls(cpu, config.train.precision) == "fp32 kernels" for config in configs.values())
    if not bf16:
        return None
    return (
        f"note: this CPU has no bf16 hardware (AVX512-BF16 or AMX): {bf16} of the {len(configs)} trials "
        "train in bf16 on fp32 kernels here (the same numbers, 1.5-1.9x slower than on bf16 hardware; "
        "their bf16_matmuls tag says so): their minutes and core-minute budgets compare within one CPU"
    )


def ray_address(address: str | None) -> str | None:
    """The cluster a sweep joins: `address`, else $RAY_ADDRESS; None for a local Ray of its own."""
    return address or os.environ.get("RAY_ADDRESS") or None


def start_ray(address: str | None, temp_dir: str | None, log_to_driver: bool = True) -> bool:
    """Connect to the cluster at `address` / $RAY_ADDRESS, else start a local Ray; True if started here."""
    import ray

    address = ray_address(address)
    if address:
        try:
            ray.init(address=address, log_to_driver=log_to_driver)
        except Exception as err:
            raise SweepError(
                f"cannot connect to the Ray cluster at {address}: {err}. With token authentication, the "
                "cluster's token must be in $RAY_AUTH_TOKEN or ~/.ray/auth_token on this machine."
            ) from err
        return False
    folder = ray_temp_dir(temp_dir)
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": log_to_driver}
    if temp_dir:
        kwargs["_temp_dir"] = str(folder)
    stop_stale_ray(folder)
    for attempt in range(3):  # on a loaded machine the raylet can miss Ray's fixed 30 s start-up wait
        try:
            ray.init(**kwargs)
            note_local_ray(folder)
            return True
        except Exception as err:
            if "timed out during startup" not in str(err) or attempt == 2:
                raise
            print(f"local Ray did not start in time ({err}); trying again", file=sys.stderr, flush=True)
            ray.shutdown()


def ray_temp_dir(temp_dir: str | None) -> Path:
    """The folder a local Ray keeps its sessions in (Ray's own default when none is given)."""
    if temp_dir:
        return Path(temp_dir).resolve()
    return Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()) / "ray"


def _note(folder: Path, pid: int) -> Path:
    """A driver's note: its pid, start time and Ray's session folder."""
    return folder / f"posdesc-driver-{pid}.json"


def note_local_ray(folder: Path) -> None:
    """Note the local Ray session this driver started, for the next sweep to stop if this one is killed."""
    import ray

    session = ray._private.worker._global_node.get_session_dir_path()  # no public API names it
    pid = os.getpid()
    noted = {"driver_pid": pid, "driver_started": _start_time(pid), "session_dir": session}
    _note(folder, pid).write_text(json.dumps(noted))


def forget_local_ray(temp_dir: str | None) -> None:
    """After `ray.shutdown()`: this driver's session is stopped, its note goes."""
    _note(ray_temp_dir(temp_dir), os.getpid()).unlink(missing_ok=True)


def _start_time(pid: int) -> int | None:
    """When process `pid` started (/proc/PID/stat's field 22), None if it is gone: with the pid, it names
    one process even where the pid is reused."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _driver_running(noted: Mapping[str, Any]) -> bool:
    """Whether the driver that wrote a note still runs (a script, a notebook or a test counts); notes
    without a start time fall back to the pid's command line naming a sweep."""
    pid = int(noted["driver_pid"])
    if "driver_started" in noted:
        return noted["driver_started"] is not None and _start_time(pid) == noted["driver_started"]
    return "sweeps" in _cmdline(pid)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _in_session(pid: int, session: str) -> bool:
    """Whether process `pid` belongs to the Ray session in folder `session`: its command line names the
    folder, or (Ray's agents rename themselves) it holds its log files open."""
    if session in _cmdline(pid):
        return True
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(fd).startswith(session + "/"):
                    return True
    return False


def stop_stale_ray(folder: Path) -> int:
    """SIGKILL (they ignore SIGTERM) the processes of each noted session whose driver is gone; how many."""
    stopped = 0
    for note in sorted(folder.glob("posdesc-driver-*.json")):
        try:
            noted = json.loads(note.read_text())
            session, running = str(noted["session_dir"]), _driver_running(noted)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if running or not session:
            continue  # its driver runs on (a sweep beside this one, from a script, a notebook or a test)
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
        left = [pid for pid in pids if pid != os.getpid() and _in_session(pid, session)]
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if left:
            print(
                f"stopped {len(left)} process(es) of the local Ray {session}, left by a sweep driver that "
                "was killed",
                file=sys.stderr,
                flush=True,
            )
        stopped += len(left)
        note.unlink(missing_ok=True)
    return stopped


def wait_for_gpus(needed: float, minutes: float) -> None:
    """Ask the autoscaler for GPU workers (cluster.yaml scales them from zero) and wait for them to join.
    The request is withdrawn once they are up: from then on the pending trials' own demands keep the
    autoscaler going, and idle workers leave after `idle_timeout_minutes`."""
    import ray
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=[{"GPU": 1}] * max(1, math.ceil(needed)))
    start = time.time()
    deadline, said = start + minutes * 60, -math.inf
    try:
        while (gpus := ray.cluster_resources().get("GPU", 0.0)) < needed and time.time() < deadline:
            if time.time() - said >= 15.0:
                print(f"waiting for GPU workers to join: {gpus:g}/{needed:g} GPUs", flush=True)
                said = time.time()
            time.sleep(1.0)  # a node joins in seconds once its instance boots
    finally:
        request_resources(bundles=[])
    gpus = ray.cluster_resources().get("GPU", 0.0)
    joined = "GPU workers joined" if gpus >= needed else f"only {gpus:g}/{needed:g} GPUs joined"
    print(f"{joined}: {gpus:g} GPUs after {time.time() - start:.0f} s", flush=True)


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


def main(argv: list[str] | None = None) -> int:
    """`stop-stale`: stop the local Ray sessions of sweep drivers that were killed (see the docstring)."""
    p = argparse.ArgumentParser(prog="python -m sweeps.cluster", description=main.__doc__)
    p.add_argument("command", choices=["stop-stale"])
    p.add_argument("--ray-temp-dir", default=None, help="the sweeps' --ray-temp-dir (default: Ray's own)")
    args = p.parse_args(argv)
    stopped = stop_stale_ray(ray_temp_dir(args.ray_temp_dir))
    print(f"stopped {stopped} process(es) of killed sweep drivers' local Ray sessions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
