"""A sweep on a real two-node Ray cluster, as `ray up cluster.yaml` builds it, shrunk onto this machine.

Everything is real and on loopback: a head (`ray start --head`) and a second node (`ray start --address`),
each with one CPU and a resource that names it; the MLflow tracking server started by the head's own
script (scripts/cluster/mlflow_server.sh: SQLite backend, artifacts proxied to a temporary folder); a
temporary folder as the shared storage_path. `sweeps/run.py --address` runs a `smoke` grid there, and the
test reads back from the server where each trial ran (tag `ray_node_id`) and that each finished.

Token authentication stays on, as on the cluster. In Ray 2.60 `ray start --head` turns it on only when a
token exists or RAY_AUTH_MODE=token, while `ray start --address` and `ray.init(address=HOST:PORT)` never
turn it on by themselves: every process here gets RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH (a fresh
token in the test's folder, so ~/.ray/auth_token is neither needed nor touched).

Each process the test starts runs in its own process session and is ended by its group, also on failure;
the test never calls `ray stop`, which would end every Ray on the machine.
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

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GRID = "mul_simple_case"  # four smoke trials: two waves over the two one-CPU nodes
NODE_LABELS = ("node_head", "node_second")


def token_auth_env(token: Path, **extra: str) -> dict[str, str]:
    """This environment for the test's Ray processes: this venv first on PATH, token authentication with
    the test's own token, no usage stats, and no address, token or tracking URI inherited from outside."""
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }
    for var in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "MLFLOW_TRACKING_URI"):
        env.pop(var, None)
    return env


pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """The processes this test started, each the leader of its own session; ended group by group."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.started: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.started.append((name, proc))
        return proc

    def stop_all(self) -> None:
        for _, proc in reversed(self.started):
            _end_group(proc.pid, signal.SIGTERM)
        deadline = time.time() + 5  # a test cluster needs no graceful drain
        for _, proc in reversed(self.started):
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.time()))
            _end_group(proc.pid, signal.SIGKILL)
            proc.wait()

    def check_alive(self) -> None:
        dead = [name for name, proc in self.started if proc.poll() is not None]
        if dead:
            raise AssertionError(f"{', '.join(dead)} exited early\n{self.tails()}")

    def tails(self, lines: int = 40) -> str:
        out = []
        for log in sorted(self.logs.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name} ---\n" + "\n".join(text))
        return "\n".join(out)


def _end_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains `text` (our temp folder): leftovers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().split(") ", 1)[1][0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def run_python(code: str, env: dict[str, str], timeout: float = 60) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


NODES_SNIPPET = """
import json, ray
ray.init(address="{address}", log_to_driver=False)
alive = [n for n in ray.nodes() if n["Alive"]]
print(json.dumps({{name: n["NodeID"] for n in alive for name in n["Resources"] if name.startswith("node_")}}))
"""


def wait_for_nodes(
    address: str, env: dict[str, str], procs: Processes, timeout: float = 120
) -> dict[str, str]:
    """label -> node id, once both nodes are alive in the cluster."""
    deadline = time.time() + timeout
    while True:
        try:
            found = json.loads(
                run_python(NODES_SNIPPET.format(address=address), env).strip().splitlines()[-1]
            )
        except (AssertionError, subprocess.TimeoutExpired, ValueError, IndexError):
            found = {}
        if set(found) == set(NODE_LABELS):
            return found
        procs.check_alive()
        if time.time() > deadline:
            raise AssertionError(f"the two nodes did not come up (saw {found})\n{procs.tails()}")
        time.sleep(2)


@contextmanager
def local_cluster() -> Iterator[dict[str, object]]:
    """Head + second node + MLflow server on loopback; yields addresses, env, node ids and folders."""
    base = Path(tempfile.mkdtemp(prefix="mn", dir="/tmp"))  # short: Ray's socket paths have a length limit
    logs = base / "logs"
    logs.mkdir()
    token = base / "auth_token"
    token.write_text(secrets.token_hex(32))
    env = token_auth_env(token)
    mlflow_env = {
        **env,
        "POSDESC_MLFLOW_DIR": str(base / "mlflow"),
        "POSDESC_MLFLOW_ARTIFACTS": str(base / "mlflow" / "artifacts"),
        "POSDESC_MLFLOW_HOST": "127.0.0.1",
        "POSDESC_MLFLOW_PORT": str(free_port()),
        "POSDESC_MLFLOW_WORKERS": "1",
    }
    server_script = ROOT / "scripts" / "cluster" / "mlflow_server.sh"
    procs = Processes(logs)
    gcs_port = free_port()
    address = f"127.0.0.1:{gcs_port}"
    node_cmd = [str(BIN / "ray"), "start", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=1"]
    node_cmd += ["--num-gpus=0", f"--temp-dir={base / 'ray'}", "--disable-usage-stats"]
    try:
        started = subprocess.run(
            ["bash", str(server_script), "start"], env=mlflow_env, capture_output=True, text=True, timeout=120
        )
        assert started.returncode == 0, started.stdout + started.stderr
        procs.start(
            "head",
            [
                *node_cmd,
                "--head",
                f"--port={gcs_port}",
                "--include-dashboard=false",
                f"--dashboard-port={free_port()}",  # Ray still serves its job/state API there
                f"--dashboard-agent-listen-port={free_port()}",
                '--resources={"node_head": 1}',
            ],
            env,
        )
        wait_for_port(gcs_port, procs)
        procs.start(
            "second",
            [
                *node_cmd,
                f"--address={address}",
                f"--dashboard-agent-listen-port={free_port()}",
                '--resources={"node_second": 1}',
            ],
            env,
        )
        nodes = wait_for_nodes(address, env, procs)
        yield {
            "address": address,
            "env": env,
            "nodes": nodes,
            "tracking_uri": f"http://127.0.0.1:{mlflow_env['POSDESC_MLFLOW_PORT']}",
            "storage": base / "shared",
            "base": base,
            "procs": procs,
        }
    finally:
        procs.stop_all()
        subprocess.run(["bash", str(server_script), "stop"], env=mlflow_env, timeout=60)
        leftovers = processes_mentioning(str(base))
        for pid in leftovers:
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)
        assert not leftovers, f"processes outlived their group: {leftovers}"


def wait_for_port(port: int, procs: Processes, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        procs.check_alive()
        time.sleep(0.5)
    raise AssertionError(f"nothing listens on port {port}\n{procs.tails()}")


def test_smoke_sweep_runs_trials_on_both_nodes_into_the_mlflow_server() -> None:
    from mlflow import MlflowClient

    from sweeps.grids import points

    expected_trials = len(points(GRID, "smoke"))
    with local_cluster() as cluster:
        # token auth is on: a driver holding another token is turned away
        wrong = cluster["base"] / "wrong_token"
        wrong.write_text(secrets.token_hex(32))
        intruder = subprocess.run(
            [sys.executable, "-c", f"import ray; ray.init(address='{cluster['address']}')"],
            env={
                **cluster["env"],
                "RAY_AUTH_TOKEN_PATH": str(wrong),
                "RAY_gcs_rpc_server_connect_timeout_s": "3",
            },
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert intruder.returncode != 0 and "auth" in intruder.stderr.lower(), intruder.stderr[-2000:]

        sweep = subprocess.run(
            [
                sys.executable,
                str(ROOT / "sweeps" / "run.py"),
                f"--grid={GRID}",
                "--scale=smoke",
                f"--address={cluster['address']}",
                f"--tracking-uri={cluster['tracking_uri']}",
                f"--storage-path={cluster['storage']}",
                "--cpus-per-trial=1",
                "--max-failures=0",
            ],
            env=cluster["env"],
            cwd=cluster["base"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        output = sweep.stdout[-4000:] + sweep.stderr[-4000:]
        assert sweep.returncode == 0, output + "\n" + cluster["procs"].tails()

        client = MlflowClient(tracking_uri=cluster["tracking_uri"])
        experiment = client.get_experiment_by_name(GRID)
        assert experiment is not None, output
        runs = client.search_runs([experiment.experiment_id])
        parents = [r for r in runs if r.data.tags.get("sweep") == "1"]
        trials = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
        assert len(parents) == 1 and parents[0].info.status == "FINISHED"
        assert len(trials) == expected_trials, output
        assert {r.data.tags["mlflow.parentRunId"] for r in trials} == {parents[0].info.run_id}
        assert [r.info.status for r in trials] == ["FINISHED"] * expected_trials
        assert all("test_acc" in r.data.metrics for r in trials)

        nodes = cluster["nodes"]
        ran_on = [r.data.tags.get("ray_node_id") for r in trials]
        assert set(ran_on) == set(nodes.values()), f"trials ran on {ran_on}; nodes {nodes}"

        # artifacts went through the server's proxy to its destination folder; results to shared storage
        artifacts = {a.path for a in client.list_artifacts(trials[0].info.run_id)}
        assert "config.json" in artifacts
        assert list((cluster["base"] / "mlflow" / "artifacts").rglob("config.json"))
        assert list(Path(cluster["storage"]).glob(f"{GRID}-smoke-*/sweep.json"))
