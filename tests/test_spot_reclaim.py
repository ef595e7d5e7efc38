"""A fault test: a spot reclaim on a simulated GPU cluster.

Ray's own fake autoscaling cluster runs on this machine: `ray start --head --autoscaling-config` with
RAY_FAKE_CLUSTER=1 and the `fake_multinode` provider, whose `ray.worker.gpu` type ({CPU: 1, GPU: 1}, fake
GPUs) scales from zero to two nodes, each a real raylet started by the autoscaler. The head offers no CPUs
to trials, as on the cluster. `sweeps/run.py --address --gpus-per-trial 0.5 --cpus-per-trial 0.5` asks the
autoscaler for a GPU and waits for it (`--gpu-wait-min`), Tune packs both trials onto that one-GPU node,
and once a trial has a checkpoint the node is reclaimed: every process of it is SIGKILLed. The trials'
resource demand brings up a replacement, they resume there (from their checkpoints into the same MLflow
runs), and the history checks of fault test 1 hold. The trials train on the CPU: a fake GPU assigned by
Ray must not make the trainer try CUDA.

Traps handled here: the wheel lacks the example.yaml that `ray.cluster_utils.AutoscalingCluster` reads, so
the config is written in full; the fake nodes join the GCS on the default port 6379, so the head listens
there (the test is skipped when 6379 is taken); and `ray stop` would end every Ray on the machine, so the
test ends its own processes only: the head leads a process group holding the GCS, the autoscaler and the
nodes it starts; Ray's workers lead groups of their own and are found, like every process of the test's
cluster, by the test's token path in their environment; a node's processes carry its id there too.
Token authentication is on as in tests/test_multinode.py.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from test_faults import check_histories, end_session, registered_checkpoint, trial_failures, wait_for
from test_multinode import Processes, token_auth_env, wait_for_port

from arith.tracking import store

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GCS_PORT = 6379  # where the fake provider's nodes look for the GCS
GRID = "add_posembed"  # as in test_faults (its history checks read this grid's experiment)
N_TRIALS = 2  # one point, two seeds: both fit on one fake GPU at 0.5 each
EPOCHS = 12
#: the fake provider gives each node its id through this variable (the head's is fixed)
NODE_ID_VAR = b"RAY_OVERRIDE_NODE_ID_FOR_TESTING="
WAIT_S = 300
#: the `*_commands` keys of a launcher config, all empty: the fake nodes run nothing on start
NO_COMMANDS = ("initialization", "setup", "head_setup", "worker_setup", "head_start_ray", "worker_start_ray")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def autoscaling_config() -> dict:
    """The fake cluster: what `AutoscalingCluster` builds from Ray's example.yaml, in full."""
    return {
        "cluster_name": "fake_gpu",
        "max_workers": 2,
        "provider": {
            "type": "fake_multinode",
            "use_node_id_as_ip": True,
            "disable_node_updaters": True,
            "disable_launch_config_check": True,
        },
        "available_node_types": {
            "ray.head.default": {"resources": {"CPU": 0}, "node_config": {}, "max_workers": 0},
            "ray.worker.gpu": {
                "resources": {"CPU": 1, "GPU": 1, "object_store_memory": 200 * 2**20},
                "node_config": {},
                "min_workers": 0,
                "max_workers": 2,
            },
        },
        "head_node_type": "ray.head.default",
        "upscaling_speed": 1.0,
        # long enough that the node the sweep asked for stays until Tune places its trials
        "idle_timeout_minutes": 5,
        "auth": {},
        "docker": {},
        **{f"{kind}_commands": [] for kind in NO_COMMANDS},
        "file_mounts": {},
        "cluster_synced_files": [],
        "file_mounts_sync_continuously": False,
        "rsync_exclude": [],
        "rsync_filter": [],
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError:
            return True
    return False


def cluster_processes(marker: str) -> dict[int, bytes]:
    """pid -> environment of every live process that carries `marker` (our token's path) in it: the
    test's cluster, its nodes, their workers and our driver, and nothing of anyone else's."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if marker.encode() in environ and state != "Z":
            found[int(entry.name)] = environ
    return found


def node_of(environ: bytes) -> str | None:
    for item in environ.split(b"\0"):
        if item.startswith(NODE_ID_VAR):
            return item[len(NODE_ID_VAR) :].decode()
    return None


@contextmanager
def fake_gpu_cluster(base: Path) -> Iterator[dict]:
    """Head (no CPUs) with the fake GPU autoscaler, on GCS port 6379; yields its address and env."""
    token = base / "auth_token"
    token.write_text(secrets.token_hex(32))
    config = base / "cluster.yaml"
    config.write_text(json.dumps(autoscaling_config()))  # JSON is YAML
    env = token_auth_env(token, PYTHONPATH=str(ROOT))
    head_env = {
        **env,
        "RAY_FAKE_CLUSTER": "1",
        "AUTOSCALER_UPDATE_INTERVAL_S": "1",
        # the GCS notices a dead node in seconds, not the default ~15 s (a dead raylet refuses at once)
        "RAY_health_check_period_ms": "1000",
        "RAY_health_check_failure_threshold": "3",
    }
    logs = base / "logs"
    logs.mkdir()
    procs = Processes(logs)
    try:
        procs.start(
            "head",
            [
                str(BIN / "ray"),
                "start",
                "--head",
                "--block",
                f"--port={GCS_PORT}",
                f"--autoscaling-config={config}",
                "--num-cpus=0",
                "--num-gpus=0",
                f"--temp-dir={base / 'ray'}",
                "--include-dashboard=false",
                f"--dashboard-port={free_port()}",
                f"--dashboard-agent-listen-port={free_port()}",
                "--disable-usage-stats",
            ],
            head_env,
        )
        wait_for_port(GCS_PORT, procs)
        import ray.util

        yield {"address": f"{ray.util.get_node_ip_address()}:{GCS_PORT}", "env": env, "procs": procs}
    finally:
        procs.stop_all()  # the head's process group: GCS, autoscaler, and the nodes the autoscaler started
        end_stragglers(str(token))
        shutil.rmtree(base, ignore_errors=True)


def end_stragglers(marker: str, timeout: float = 15) -> None:
    """SIGKILL what is left of the cluster after its process group: Ray's workers lead process groups of
    their own (they would exit by themselves once their raylet is gone); fail if anything survives."""
    deadline = time.monotonic() + timeout
    while (left := cluster_processes(marker)) and time.monotonic() < deadline:
        for pid in left:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    assert not left, f"processes of the test's cluster survived: {sorted(left)}"


def packed_trials(marker: str, storage: Path) -> tuple[str, set[str]] | None:
    """(node id, the trials with a checkpoint the driver holds) once every trial runs in a worker on one
    node (two 0.5-GPU trials packed on its one GPU) and at least one of them has such a checkpoint."""
    by_node: dict[str, dict[str, bool]] = {}
    for pid, environ in cluster_processes(marker).items():
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            trial_id = Path(os.readlink(f"/proc/{pid}/cwd")).name  # Tune runs a trial in working_dirs/<id>
        except OSError:
            continue
        node = node_of(environ)
        if node and title.startswith("ray::ImplicitFunc"):
            by_node.setdefault(node, {})[trial_id] = registered_checkpoint(storage, trial_id)
    for node, trials in by_node.items():
        if len(trials) == N_TRIALS and any(trials.values()):
            return node, {trial_id for trial_id, saved in trials.items() if saved}
    return None


def reclaim(marker: str, node: str) -> list[int]:
    """SIGKILL every process of `node` (raylet, agents, workers): a spot instance taken back."""
    killed = [pid for pid, environ in cluster_processes(marker).items() if node_of(environ) == node]
    for pid in killed:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return killed


def run_ids(uri: str) -> dict[str, str]:
    """run name -> run id of the grid's trial runs."""
    client = store.client(uri)
    runs = store.search_runs(client, store.experiment_ids(client, [GRID]))
    return {r.info.run_name: r.info.run_id for r in runs if r.data.tags.get("sweep") != "1"}


def run_name(sweep_dir: Path, trial_id: str) -> str:
    config = json.loads((sweep_dir / trial_id / "params.json").read_text())
    return f"{config['point']},seed={config['seed']}"


def test_spot_reclaim_of_a_gpu_worker_mid_trial(tmp_path) -> None:
    from ray.autoscaler._private.fake_multi_node.node_provider import FAKE_HEAD_NODE_ID

    if port_in_use(GCS_PORT):
        pytest.skip(f"port {GCS_PORT} is taken: Ray's fake cluster needs its GCS there")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    storage = tmp_path / "ray_results"
    base = Path(tempfile.mkdtemp(prefix="sr", dir="/tmp"))  # short: Ray's socket paths have a length limit
    with fake_gpu_cluster(base) as cluster:
        marker = cluster["env"]["RAY_AUTH_TOKEN_PATH"]
        cmd = [sys.executable, "sweeps/run.py", "--grid", GRID, "--scale", "smoke"]
        cmd += ["--only", "model.position=learned", "--seeds", str(N_TRIALS)]
        cmd += ["--set", f"train.epochs={EPOCHS}", "--set", "train.eval_epochs=[2]"]
        cmd += ["--address", cluster["address"], "--gpus-per-trial", "0.5", "--cpus-per-trial", "0.5"]
        cmd += ["--gpu-wait-min", "3", "--max-failures", "3"]
        cmd += ["--tracking-uri", uri, "--storage-path", str(storage)]
        log = (tmp_path / "sweep.log").open("w")
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=cluster["env"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            node, checkpointed = wait_for(
                lambda: packed_trials(marker, storage),
                proc,
                WAIT_S,
                "both trials on one node, one checkpointed",
            )
            assert node != FAKE_HEAD_NODE_ID  # the head offers no CPUs to trials
            killed_at = time.monotonic()
            assert reclaim(marker, node)
            # read at once: a retry starts only once the GCS has declared the node dead, a replacement
            # node has joined and a new worker has started (tens of seconds)
            runs_before = run_ids(uri)
            rc = proc.wait(timeout=WAIT_S)
            recovered_s = time.monotonic() - killed_at
        finally:
            end_session(proc.pid)
            log.close()
        output = (tmp_path / "sweep.log").read_text()
        assert rc == 0, output[-4000:] + "\n" + cluster["procs"].tails()
        assert not [pid for pid, env in cluster_processes(marker).items() if node_of(env) == node]

    # the sweep asked the autoscaler for the GPU it lacked and waited for a worker to join
    assert "waiting for GPU workers to join: 0/1 GPUs" in output, output[-4000:]
    assert "GPU workers joined: 1 GPUs" in output, output[-4000:]
    (sweep_dir,) = storage.glob(f"{GRID}-smoke-*")
    failures = trial_failures(sweep_dir)
    assert len(failures) == N_TRIALS and all(n >= 1 for n in failures.values())  # both died, both retried
    runs_after = run_ids(uri)
    for trial_id in checkpointed:  # restored from its checkpoint into the run it had before the reclaim
        name = run_name(sweep_dir, trial_id)
        assert runs_after[name] == runs_before[name], (name, runs_before, runs_after)

    client = store.client(uri)
    (experiment,) = store.experiment_ids(client, [GRID])
    for run in store.search_runs(client, [experiment]):
        if run.data.tags.get("sweep") == "1":
            continue
        tags = run.data.tags
        assert tags["ray_node_id"] not in (node, FAKE_HEAD_NODE_ID)  # resumed on another GPU worker
        assert tags["ray_gpus"] == "0.5" and tags["device"] == "cpu"  # a fake GPU; torch stayed on the CPU
        assert int(run.data.metrics["epochs_done"]) == EPOCHS
    check_histories(uri, N_TRIALS)
    print(f"recovered and finished {recovered_s:.0f} s after the reclaim")
