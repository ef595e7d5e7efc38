"""The cpu reproduction's parts across sessions: a stopped part found again by its command and resumed, a
part ended early archived as it stands, the machine named, a session's wall time kept."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_reproduce_cpu import ROOT

from lab.plan import (
    PLAN,
    TAG_COMMAND,
    TAG_COMMITS,
    TAG_MACHINE,
    TAG_WALL,
    Planned,
    part_runs,
    ran_lines,
    seeds_of,
    sweep_args_of,
)
from lab.results import page as results
from sweeps.errors import SweepError


def test_a_part_resumed_under_other_code_names_its_commits() -> None:
    (part,) = [p for p in PLAN if p.grid == "reverse_posembed_replication"]
    tags = {TAG_COMMAND: "python sweeps/run.py --grid x", TAG_WALL: "600", TAG_MACHINE: "AMD EPYC"}
    one = ran_lines(part, {**tags, TAG_COMMITS: "a" * 40}, 0)
    assert [line.split(":")[0] for line in one] == ["- command", "  - wall time", "  - seeds"]
    both = ran_lines(part, {**tags, TAG_COMMITS: f"{'a' * 40}; {'b' * 40}-dirty"}, 0)
    assert both[-1] == (
        f"  - commits: started under {'a' * 12}, resumed under {'b' * 12} (a trial resumed trained on under "
        "that code)"
    )


def test_a_grid_not_yet_run_shows_its_command_and_planned_core_minutes() -> None:
    (part,) = [p for p in PLAN if p.grid == "reverse_posembed_replication"]
    text = results.section(results.GridResult(part.grid, [(part, None)], None, [None]))
    assert text.startswith(
        "## reverse_posembed_replication\n\n**Not yet run** at cpu_recipe scale (fig:randembed"
    )
    assert "`python -m lab.reproduce --grids reverse_posembed_replication`" in text
    command = (
        "python -m lab.sweep --grid reverse_posembed_replication --scale cpu_recipe --seeds "
        "20,21,22,23,24,25,26,27,28,29 --set train.precision=fp32 --tracking-uri "
        "sqlite:///runs/cpu/mlflow.db --storage-path runs/cpu/ray_results"
    )
    assert f"- `{command}`\n  - core-minutes: planned {part.estimate_core_min:,.0f}" in text


def test_a_stopped_part_is_found_again_by_its_command_and_its_sessions_add_up(tmp_path: Path) -> None:
    """The sweep folder a session leaves records the command line that started it, less where it ran, so
    the next session's reproduction of the same part resumes it (and another part's starts its own); the
    sweep's record then holds every session's wall time and machine."""
    from arith.tracking.commands import sweep_identity
    from lab.sweep_sessions import PartStorage
    from sweeps.grids import get_grid
    from sweeps.scales import get_scale
    from sweeps.storage import sweep_state

    (part,) = [p for p in PLAN if p.grid == "reverse_posembed_replication"]
    started = [*part.command("sqlite:////a dir/mlflow.db", "/a dir/ray"), "--resume", "--quiet"]
    assert sweep_identity(started[2:]) == part.sweep_args()
    assert sweep_identity(["--grid", "demo", "--tracking-uri=sqlite:///x.db", "--seeds", "2"]) == [
        "--grid",
        "demo",
        "--seeds",
        "2",
    ]

    folders = PartStorage(str(tmp_path / "ray_results"))
    assert folders.stopped(part.grid, part.scale, part.sweep_args()) is None  # nothing to resume
    grid, scale = get_grid(part.grid), get_scale(part.scale)
    name = f"{part.grid}-{part.scale}-20261129-000000"
    folders.create(
        name, sweep_state(grid, scale, "sqlite:///x.db", "abc", {"CPU": 1.0}, {}, part.sweep_args())
    )
    assert folders.stopped(part.grid, part.scale, part.sweep_args()) == name
    other = [*part.sweep_args()[:-2], "--set", "train.precision=bf16"]
    assert folders.stopped(part.grid, part.scale, other) is None  # another part's command: a sweep of its own
    # a later part's sweep of the same grid does not hide this one: each resumes its own
    later = f"{part.grid}-{part.scale}-20261130-000000"
    folders.create(later, sweep_state(grid, scale, "sqlite:///x.db", "def", {"CPU": 1.0}, {}, other))
    assert folders.stopped(part.grid, part.scale, part.sweep_args()) == name
    assert folders.stopped(part.grid, part.scale, other) == later
    assert folders.latest(part.grid, part.scale) == later  # a bare --resume: the latest
    with pytest.raises(SweepError, match="started as") as err:
        folders.latest(part.grid, part.scale, [*other, "--seeds", "3"])
    assert name in str(err.value) and later in str(err.value)  # it lists what is there to resume

    assert folders.add_session(name, 3000.0, "AMD EPYC (no native bf16), 2 CPU cores, Linux", "a1") == (
        3000.0,
        "AMD EPYC (no native bf16), 2 CPU cores, Linux",
        "a1",
    )
    wall, machines, commits = folders.add_session(
        name, 1200.0, "Intel Xeon (native bf16), 2 CPU cores, Linux", "b2"
    )
    assert wall == 4200.0 and machines.split("; ") == [
        "AMD EPYC (no native bf16), 2 CPU cores, Linux",
        "Intel Xeon (native bf16), 2 CPU cores, Linux",
    ]
    assert commits == "a1; b2"  # the code each session ran, in order
    # a running session noted again and again (its wall time so far) is one session, its latest note
    for so_far in (60.0, 120.0):
        wall, _, commits = folders.add_session(name, so_far, "Intel Xeon", "c3", session="s3")
    assert wall == 4320.0 and commits == "a1; b2; c3" and len(folders.session_entries(name)) == 3
    assert folders.state(name)["args"] == part.sweep_args()  # the sessions keep what identifies the sweep
    assert not list((tmp_path / "ray_results").rglob("*.part"))  # each file written whole
    # sessions noted in sweep.json itself, as sweeps first noted them, still count, first
    folders.save(
        name, {**folders.state(name), "sessions": [{"wall_s": 10.0, "machine": "Zen 3", "commit": "z0"}]}
    )
    wall, _, commits = folders.sessions(name)
    assert wall == 4330.0 and commits == "z0; a1; b2; c3"


def test_a_part_ended_early_is_archived_as_it_stands_and_never_resumed(tmp_path: Path) -> None:
    """The plan ends a stopped part for good (`ended_early`: what its other trials could not change): the
    reproduction records and archives its sweep as the stopped session left it, its finished trials kept,
    the one a session left RUNNING marked KILLED, and the part counts as run (its section says why)."""
    import dataclasses

    from mlflow import MlflowClient

    from arith.tracking.archive import read_archive
    from lab.run_part import end_part
    from lab.sweep_sessions import PartStorage
    from sweeps.grids import get_grid
    from sweeps.scales import get_scale
    from sweeps.storage import sweep_state

    uri, storage = f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "ray_results"
    (judged,) = [p for p in PLAN if p.grid == "add_posembed_recipe_long" and p.seeds == (0, 1, 2, 3, 4)]
    part = dataclasses.replace(judged, ended_early="seed 0 of random_embed missed the gate")
    client = MlflowClient(uri)
    experiment = client.create_experiment(part.grid, artifact_location=(tmp_path / "art").as_uri())
    parent = client.create_run(experiment, tags={"sweep": "1", "grid": part.grid, "git_commit": "c0"})
    client.set_terminated(parent.info.run_id, "KILLED")  # a Ctrl+C ended the session
    trial = {"mlflow.parentRunId": parent.info.run_id}
    done = client.create_run(experiment, tags={**trial, "seed": "0"}, run_name="position=random_embed,seed=0")
    client.log_metric(done.info.run_id, "test_acc/in_range", 0.73)
    client.set_terminated(done.info.run_id, "FINISHED")
    stopped = client.create_run(experiment, tags={**trial, "seed": "1"}, run_name="position=learned,seed=1")
    a_minute_in = stopped.info.start_time + 60_000
    client.log_metric(stopped.info.run_id, "train/loss", 2.5, step=20, timestamp=a_minute_in)
    lost = client.create_run(experiment, tags={**trial, "seed": "2"}, run_name="position=learned,seed=2")

    folders = PartStorage(str(storage))
    end_part(part, uri, str(storage), archives=tmp_path)  # nothing stopped yet: nothing to archive
    assert not (tmp_path / part.archive_name).exists()
    name = f"{part.grid}-{part.scale}-20261129-072717"
    grid, scale = get_grid(part.grid), get_scale(part.scale)
    folders.create(
        name, sweep_state(grid, scale, uri, parent.info.run_id, {"CPU": 1.0}, {}, part.sweep_args())
    )
    folders.add_session(name, 3000.0, "AMD EPYC (no native bf16), 2 CPU cores, Linux", "c1")
    folders.add_session(name, 600.0, "AMD EPYC (no native bf16), 2 CPU cores, Linux", "c2")
    end_part(part, uri, str(storage), archives=tmp_path)

    assert client.get_run(done.info.run_id).info.status == "FINISHED"
    # stopped after training a while: KILLED when it last logged; stopped at its start: no run left
    assert client.get_run(stopped.info.run_id).info.status == "KILLED"
    assert client.get_run(stopped.info.run_id).info.end_time == a_minute_in
    assert client.get_run(lost.info.run_id).info.lifecycle_stage == "deleted"
    tags = client.get_run(parent.info.run_id).data.tags
    assert tags["reproduce.ended_early"] == part.ended_early
    assert tags[TAG_WALL] == "3600" and tags[TAG_COMMITS] == "c0; c1; c2"
    assert sweep_args_of(tags[TAG_COMMAND]) == part.sweep_args()
    ((_, found),) = part_runs(client, part.grid, (part,))
    assert found.info.run_id == parent.info.run_id
    header, (_parent, *runs) = read_archive(tmp_path / part.archive_name)
    assert header["trials"] == 2 and {r["status"] for r in runs} == {"KILLED", "FINISHED"}
    assert len(folders.session_entries(name)) == 2  # not resumed: no session added
    lines = ran_lines(part, tags, 0)
    assert "  - seeds: 0, 1, 2, 3, 4 planned" in lines
    assert f"  - **ended early**, its other trials not run: {part.ended_early}" in lines
    whole = dataclasses.replace(part, ended_early="")
    # the findings' "sweeps' seeds" name only the seeds its finished trials ran
    assert seeds_of([(part, None)], {0, 7}) == "0" and seeds_of([(whole, None)], {0}) == "0, 1, 2, 3, 4"


def test_the_machine_names_its_processor_its_family_and_whether_it_has_native_bf16(tmp_path: Path) -> None:
    from arith.training.hardware import cpu_name

    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum\nflags\t\t: fpu avx2 amx_bf16 amx_tile\n"
    )
    assert cpu_name(info) == "Intel(R) Xeon(R) Platinum (native bf16)"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2\n")
    assert cpu_name(info) == "AMD EPYC (no native bf16)"
    # a VM's model name may be the vendor's alone: the family and model numbers tell a Zen 4 from a Zen 5
    zen = "processor\t: 0\ncpu family\t: {}\nmodel\t\t: {}\nmodel name\t: AMD EPYC\nflags\t\t: avx512_bf16\n"
    info.write_text(zen.format(25, 17))
    assert cpu_name(info) == "AMD EPYC (family 25 model 17, native bf16)"
    info.write_text(zen.format(26, 2))
    assert cpu_name(info) == "AMD EPYC (family 26 model 2, native bf16)"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def a_session_of_a_part(
    tmp_path: Path, request, note_every_s: float | None = None
) -> tuple[Planned, str, Path, str, dict[str, str]]:
    """A smoke part of the fault tests' grid (a trial that checkpoints early), its store and sweep folder,
    the code of a session that runs it (`run_part` in a fresh interpreter; `note_every_s`: how often it
    notes its wall time) and the environment to run that in (a Ray temp folder of its own). Started by
    `start_session`."""
    import shutil
    import tempfile

    from test_faults import GRID, clean_env

    uri, storage = f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "ray_results"
    part = Planned(
        grid=GRID,
        scale="smoke",
        seeds=1,
        only=("model.position=learned",),
        sets=("train.epochs=30", "train.eval_epochs=[2,4]"),
    )
    code = (
        "import pathlib\n"
        "from lab.plan import Planned\n"
        "from lab import run_part as reproduce\n"
        + (f"reproduce.NOTE_EVERY_S = {note_every_s}\n" if note_every_s else "")
        + f"part = Planned(grid={part.grid!r}, scale='smoke', seeds=1,"
        f" only={part.only!r}, sets={part.sets!r})\n"
        f"reproduce.run_part(part, {uri!r}, {str(storage)!r}, archives=pathlib.Path({str(tmp_path)!r}))\n"
    )
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # a socket path in tmp_path is too long for Ray
    request.addfinalizer(lambda: shutil.rmtree(ray_tmp, ignore_errors=True))
    return part, uri, storage, code, clean_env(RAY_TMPDIR=ray_tmp)


def start_session(code: str, env: dict[str, str], log) -> subprocess.Popen:
    """A session of `a_session_of_a_part`, leading its own process session (its sweep and Ray in it), so that
    a test can end it as a Ctrl-C or a machine's stop would."""
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_a_part_stopped_mid_trial_resumes_in_the_next_session(tmp_path: Path, request) -> None:
    """A session ends (Ctrl-C to the reproduction and its sweep) while a part's trial is past its first
    checkpoint; the next session's reproduction of the same part resumes that sweep rather than starting
    another: one parent run, each trial one run whose history holds every step once (a restart from step 0
    would log its first steps twice), and the record's wall time is both sessions'."""
    import os
    import signal

    from test_faults import GRID, WAIT_S, check_histories, checkpoints_of, end_session, wait_for

    from arith.tracking import store
    from lab.sweep_sessions import PartStorage

    part, uri, storage, code, env = a_session_of_a_part(tmp_path, request)
    log = (tmp_path / "session1.log").open("w")
    first = start_session(code, env, log)
    try:
        wait_for(
            lambda: any(p.name == "checkpoint_000001" for p in checkpoints_of(storage)),
            first,
            WAIT_S,
            "checkpoints",
        )
        os.killpg(first.pid, signal.SIGINT)  # the session ends: Ctrl-C reaches the script, its sweep and Ray
        first.wait(timeout=WAIT_S)
    finally:
        end_session(first.pid)
        log.close()
    assert first.returncode != 0
    said = (tmp_path / "session1.log").read_text()
    # a stop, not a failure: the reproduction says so and exits 130, without a traceback
    assert "SweepInterrupted" in said and "CalledProcessError" not in said, said[-3000:]
    folders = PartStorage(str(storage))
    (name,) = [p.name for p in storage.iterdir() if p.is_dir()]
    assert folders.stopped(part.grid, part.scale, part.sweep_args()) == name
    assert len(folders.session_entries(name)) == 1
    # a later sweep of the grid in the store (another part's, or one imported from another machine's
    # archive): the resumed part records and archives its own parent run, not the store's latest
    client = store.client(uri)
    (experiment,) = store.experiment_ids(client, [GRID])
    later = client.create_run(experiment, tags={"sweep": "1", "grid": GRID, "scale": part.scale}).info.run_id
    client.set_terminated(later, "FINISHED")

    second = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=2 * WAIT_S
    )
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "--resume (a stopped session's)" in second.stdout
    assert [p.name for p in storage.iterdir() if p.is_dir()] == [name]  # no second sweep
    check_histories(uri, 1)
    sessions = folders.session_entries(name)
    assert len(sessions) == 2
    parent = client.get_run(folders.state(name)["parent_run_id"])
    assert TAG_COMMAND not in client.get_run(later).data.tags  # the later sweep's record left alone
    assert float(parent.data.tags[TAG_WALL]) == pytest.approx(sum(s["wall_s"] for s in sessions), abs=1)
    # both sessions ran this checkout: one commit on record, the sweep's own
    assert sessions[0]["commit"] == sessions[1]["commit"] == parent.data.tags[TAG_COMMITS]
    assert sweep_args_of(parent.data.tags[TAG_COMMAND]) == part.sweep_args()  # its part's, without --resume
    assert (tmp_path / part.archive_name).exists()


@pytest.mark.slow
def test_a_session_whose_machine_stops_keeps_its_wall_time(tmp_path: Path, request) -> None:
    """A machine stops without warning (every process of the session SIGKILLed: no Ctrl-C, no finally)
    while a part's sweep runs: the sweep's sweep.json still holds the session, with the wall time it had
    run until its last note (noted every second here, every minute in a reproduction), and the part is
    found as a stopped sweep for the next session to resume."""
    from test_faults import WAIT_S, checkpoints_of, end_session, wait_for

    from lab.sweep_sessions import PartStorage

    part, _, storage, code, env = a_session_of_a_part(tmp_path, request, note_every_s=1.0)
    started = time.monotonic()
    with (tmp_path / "session.log").open("w") as log:
        session = start_session(code, env, log)
        try:
            wait_for(lambda: any(checkpoints_of(storage)), session, WAIT_S, "a checkpoint")
            time.sleep(2)  # a note after the checkpoint
        finally:
            end_session(session.pid)  # the machine stops
        session.wait(timeout=30)
    ran_s = time.monotonic() - started
    folders = PartStorage(str(storage))
    name = folders.stopped(part.grid, part.scale, part.sweep_args())
    assert name is not None, (tmp_path / "session.log").read_text()[-3000:]
    (noted,) = folders.session_entries(name)
    assert 0 < noted["wall_s"] <= ran_s and noted["session"], noted
