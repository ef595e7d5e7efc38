"""cluster.yaml is a config `ray up` accepts, and keeps the promises of docs/CLUSTER.md ("Run on a cluster").

`ray up` fills the provider's defaults in (`prepare_config`) and then checks the result against Ray's
autoscaler schema (`validate_config`, ray/autoscaler/ray-schema.json); the tests run those same two
functions of the installed Ray, so a key Ray does not know fails here rather than on the cloud.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import ray
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

ROOT = Path(__file__).resolve().parents[1]
CLUSTER_YAML = ROOT / "cluster.yaml"
SCRIPTS = ROOT / "scripts" / "cluster"


def load_cluster_config() -> dict[str, Any]:
    return yaml.safe_load(CLUSTER_YAML.read_text())


def validate_like_ray_up(config: dict[str, Any]) -> dict[str, Any]:
    """The provider-independent part of `ray up`'s config bootstrap (ray.autoscaler._private.commands)."""
    prepared = prepare_config(copy.deepcopy(config))
    validate_config(prepared)
    return prepared


def all_commands(config: dict[str, Any]) -> str:
    keys = [k for k in config if k.endswith("_commands")]
    return "\n".join(cmd for k in keys for cmd in config[k])


def test_cluster_yaml_passes_rays_autoscaler_schema() -> None:
    prepared = validate_like_ray_up(load_cluster_config())
    assert prepared["head_node_type"] in prepared["available_node_types"]


@pytest.mark.parametrize(
    ("section", "key", "misspelled"),
    [
        ((), "available_node_types", "availabel_node_types"),
        (("available_node_types", "gpu_worker"), "min_workers", "min_worker"),
        (("docker",), "worker_image", "worker_imgae"),
        (("auth",), "ssh_user", "ssh_usr"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_misspelled_key_fails_validation(section: tuple[str, ...], key: str, misspelled: str) -> None:
    config = load_cluster_config()
    parent = config
    for name in section:
        parent = parent[name]
    parent[misspelled] = parent.pop(key)
    with pytest.raises(jsonschema.ValidationError, match=misspelled):
        validate_like_ray_up(config)


def test_gpu_workers_scale_from_zero_on_spot_instances() -> None:
    config = load_cluster_config()
    node_types = config["available_node_types"]
    head = config["head_node_type"]
    workers = {name: t for name, t in node_types.items() if name != head}
    assert workers, "cluster.yaml needs a worker node type"
    for name, node_type in workers.items():
        assert node_type["min_workers"] == 0, f"{name} should scale from 0"
        assert node_type["max_workers"] >= 1
        assert node_type["node_config"]["InstanceMarketOptions"]["MarketType"] == "spot"
    assert "--gpus all" in config["docker"]["worker_run_options"]
    assert node_types[head]["node_config"]["InstanceType"].startswith(("m", "c", "r")), (
        "the head is a CPU node"
    )


def test_images_are_current_rayproject_ray_at_the_installed_ray_version() -> None:
    docker = load_cluster_config()["docker"]
    for key in ("image", "head_image", "worker_image"):
        image = docker[key]
        assert image.startswith("rayproject/ray:"), (
            f"{key}={image}: use rayproject/ray (ray-ml is deprecated)"
        )
        assert image.split(":")[1].startswith(f"{ray.__version__}-"), (
            f"{key}={image} differs from ray {ray.__version__}"
        )
    assert docker["worker_image"].endswith("-gpu")


def test_security_token_auth_on_dashboard_private_no_credentials() -> None:
    config = load_cluster_config()
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):
        start = next(cmd for cmd in config[key] if "ray start" in cmd)
        assert "RAY_AUTH_MODE=token" in start, f"{key}: `ray start` must run with token auth on"
    commands = all_commands(config)
    assert "--dashboard-host" not in commands, "the dashboard must stay on 127.0.0.1 (reach it via SSH)"
    assert "disabled" not in commands
    text = CLUSTER_YAML.read_text()
    assert not re.search(r"AKIA[0-9A-Z]{16}|aws_secret_access_key|AWS_SECRET|password", text, re.IGNORECASE)
    assert "security_group" not in config["provider"], (
        "keep Ray's default group: SSH in, cluster-internal rest"
    )
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"


def test_project_is_installed_from_the_working_tree_with_the_bucket_set_once() -> None:
    config = load_cluster_config()
    assert config["file_mounts"]["~/posdesc"] == "."
    assert ".gitignore" in config["rsync_filter"]
    commands = all_commands(config)
    assert "scripts/cluster/setup_node.sh" in commands
    assert "scripts/cluster/mlflow_server.sh start" in "\n".join(config["head_start_ray_commands"])
    assert len(re.findall(r"POSDESC_BUCKET=s3://", CLUSTER_YAML.read_text())) == 1
    for script in re.findall(r"scripts/cluster/[\w.]+", commands):
        assert (ROOT / script).is_file(), f"cluster.yaml runs {script}, which does not exist"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_node_scripts_are_valid_bash(script: str) -> None:
    result = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_setup_node_takes_torch_range_from_pyproject() -> None:
    """setup_node.sh installs torch by the spec pyproject.toml gives it, so nodes match the local install."""
    snippet = re.search(r"<<'PY'\n(.*?)\nPY", (SCRIPTS / "setup_node.sh").read_text(), re.DOTALL)
    assert snippet is not None
    result = subprocess.run(
        [sys.executable, "-", str(ROOT / "pyproject.toml")],
        input=snippet.group(1),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("torch") and "<=" in result.stdout


def test_cost_probe_measures_the_training_set_it_stands_for() -> None:
    from arith.config import DataConfig
    from arith.data.datasets import train_examples
    from arith.model.tokenizer import build_tokenizer, encode_examples
    from sweeps import cost

    data = DataConfig(task="add", format="padding_reverse", min_digits=1, max_digits=8, train_samples=2000)
    probed = cost.measure(data, probe=400)
    full = train_examples(data)
    tokenizer = build_tokenizer(e.text for e in full)
    lengths = [len(ids) for ids, _ in encode_examples(tokenizer, full)]
    assert probed.samples == len(full)
    assert probed.tokens_per_sample == pytest.approx(sum(lengths) / len(lengths), rel=0.05)


def test_cost_of_a_grid_is_samples_times_epochs_times_tokens_over_throughput() -> None:
    from sweeps import cost
    from sweeps.grids import points

    row = cost.grid_cost("add_posembed", tokens_per_s=50_000, probe=200, seeds=2, cache={})
    trials = points("add_posembed", "paper")
    size = cost.measure(trials[0].data, probe=200)  # the grid's points share one data config
    tokens = 2 * sum(size.samples * cfg.train.epochs * size.tokens_per_sample for cfg in trials)
    assert row["trials"] == 2 * len(trials)
    assert row["GPU-hours"] == pytest.approx(tokens / 50_000 / 3600)
    assert "GPU-hours" in cost.cost_table([row], usd_per_gpu_hour=0.0)
