"""Shared test set-up."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    """Tiny models run fastest on one thread: more threads only oversubscribe a small machine's cores
    (trials inside Ray set their own thread count from their CPUs)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def empty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialised, empty SQLite store (creating MLflow's tables takes seconds: done once, copied by the
    tests that write one)."""
    from mlflow import MlflowClient

    db = tmp_path_factory.mktemp("template") / "mlflow.db"
    MlflowClient(f"sqlite:///{db}").search_experiments()
    return db
