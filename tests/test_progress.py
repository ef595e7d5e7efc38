"""The sweep's progress line (sweeps/progress.py): its text and time left on Tune's own Trial objects, and
the callback inside a real (tiny) Tune run."""

from __future__ import annotations

import io
import time

import pytest
from ray.tune.experiment import Trial

from lab.sweep_progress import BudgetProgress, BudgetState, budget_seconds_left
from sweeps.progress import SweepProgress, TrialState, clock, progress_line, seconds_left, tune_output


def key_of(config: dict) -> str:
    return f"{config['point']}|seed={config['seed']}"


def trial(point: str, status: str = Trial.PENDING, **result) -> Trial:
    """A real Tune Trial (stub: no trainable registered) in `status` with `result` as its last report."""
    made = Trial("run_trial", config={"point": point, "seed": 0}, stub=True)
    made.set_status(status)
    if result:
        made.update_last_result(result)
    return made


def test_clock() -> None:
    assert [clock(s) for s in (0, 42.4, 125, 3723)] == ["0:00", "0:42", "2:05", "1:02:03"]


def test_time_left_queues_pending_trials_onto_the_free_slots() -> None:
    # two slots: the running trials need 100 s and 20 s more; two pending trials of 100 steps at the mean
    # rate (1 s a step) start as slots free up: 20 + 100 = 120 s, then 100 + 100 = 200 s
    running = [TrialState("RUNNING", 100, 200, 100.0), TrialState("RUNNING", 80, 100, 80.0)]
    pending = [TrialState("PENDING", 0, 100, 0.0)] * 2
    assert seconds_left(running + pending, slots=2) == pytest.approx(200.0)
    # before any trial has taken a step there is no rate to go by
    assert seconds_left([TrialState("RUNNING", 0, 100, 3.0), *pending], slots=2) is None
    # a finished trial's rate counts for the pending ones; nothing left to run is 0
    assert seconds_left([TrialState("TERMINATED", 50, 50, 25.0), *pending], slots=1) == pytest.approx(100.0)
    assert seconds_left([TrialState("TERMINATED", 50, 50, 25.0)], slots=1) == 0.0


def test_a_search_caps_each_trial_at_its_cpu_budget_and_says_at_most() -> None:
    """Under a search's scheduler a trial ends at its CPU-time budget at the latest: 20,000 steps at a
    second each would be 5.6 h, but 60 CPU seconds at 2 wall seconds each is 2 min."""
    running = BudgetState("RUNNING", 10, 20_000, 20.0, clock=10.0)  # 2 wall s per CPU s
    pending = BudgetState("PENDING", 0, 20_000, 0.0)
    assert seconds_left([running, pending], slots=1) == pytest.approx(19_990 * 2.0 + 20_000 * 2.0)
    # running: (60 - 10) CPU s x 2; pending: 60 x the mean ratio 2, queued after it on the one slot
    assert budget_seconds_left([running, pending], 1, clock_budget_s=60.0) == pytest.approx(100.0 + 120.0)
    progress = BudgetProgress({"a|seed=0": 20_000, "b|seed=0": 20_000}, key_of, 60.0, "test_acc", tty=False)
    running_trial = trial("a", Trial.RUNNING, step=10, time_total_s=20.0, cpu_seconds=10.0)
    assert progress.line([running_trial]).endswith("left at most ~3:40")


def test_line_counts_states_and_shows_accuracies() -> None:
    states = [
        TrialState("TERMINATED", 10, 10, 10.0),
        TrialState("RUNNING", 5, 10, 5.0),
        TrialState("PENDING", 0, 10, 0.0),
        TrialState("ERROR", 3, 10, 4.0),
    ]
    line = progress_line(states, 75.0, {"a": 0.5, "b": 0.875}, slots=1)
    assert line == (
        "[1:15] trials 1 done, 1 running, 1 pending, 1 failed | best test_acc: a 0.50, b 0.88 | left ~0:15"
    )
    assert progress_line(states[:1], 3.0, {}, 1) == (
        "[0:03] trials 1 done, 0 running, 0 pending, 0 failed | best test_acc -"
    )


def test_callback_on_tune_trials_counts_trials_not_created_yet_and_throttles() -> None:
    steps = {key_of({"point": p, "seed": 0}): 100 for p in ("a", "b", "c")}
    out = io.StringIO()
    progress = SweepProgress(steps, key_of, stream=out, every_s=3600.0, tty=False)
    first = trial("a", Trial.RUNNING, step=50, time_total_s=25.0, test_acc=0.4, evaluated=True)
    trials = [first, trial("b", Trial.RUNNING, step=20, time_total_s=20.0, test_acc=0.0, evaluated=False)]
    for t in trials:
        progress.on_trial_result(0, trials, t, t.last_result)
    progress.on_step_end(0, trials)
    progress.on_step_end(1, trials)  # within every_s: nothing more written
    (line,) = out.getvalue().splitlines()
    # c is not created yet: pending. Left: a 25 s, b 80 s; c (100 steps at the pace measured so far, 45 s
    # over 70 steps) after a: 25 + 64 = 89 s
    assert "trials 0 done, 2 running, 1 pending, 0 failed" in line
    assert "| best test_acc: a 0.40 |" in line and line.endswith("left ~1:29")  # b has not evaluated yet
    first.set_status(Trial.TERMINATED)
    first.update_last_result({**first.last_result, "done": True})  # as Tune marks a trial's end
    progress.on_trial_complete(2, trials, first)  # a finished trial is always shown
    assert "trials 1 done, 1 running, 1 pending" in out.getvalue().splitlines()[-1]


def test_a_trial_ended_by_a_nan_loss_counts_as_failed() -> None:
    """The trainable ends such a trial normally (so Tune does not retry it): Tune says TERMINATED."""
    steps = {key_of({"point": p, "seed": 0}): 10 for p in ("a", "b")}
    progress = SweepProgress(steps, key_of, stream=io.StringIO(), tty=False)
    trials = [
        trial("a", Trial.TERMINATED, step=10, time_total_s=5.0, done=True),
        trial("b", Trial.TERMINATED, step=1, time_total_s=1.0, nonfinite_loss=1, error="loss became nan"),
    ]
    assert "trials 1 done, 0 running, 0 pending, 1 failed" in progress.line(trials)


def test_a_stopped_sweep_counts_its_unfinished_trials_as_interrupted_not_done() -> None:
    """Ctrl+C (or a session's end) leaves every trial TERMINATED, the unfinished ones without `done`."""
    steps = {key_of({"point": p, "seed": 0}): 10 for p in ("a", "b", "c")}
    progress = SweepProgress(steps, key_of, stream=io.StringIO(), tty=False)
    trials = [
        trial("a", Trial.TERMINATED, step=10, time_total_s=5.0, done=True),
        trial("b", Trial.TERMINATED, step=4, time_total_s=2.0),
        trial("c", Trial.TERMINATED),  # never started
    ]
    line = progress.line(trials)
    assert "trials 1 done, 0 running, 0 pending, 0 failed, 2 interrupted |" in line
    assert "left" not in line  # nothing runs or waits


def test_a_callback_pickled_by_an_older_version_runs_after_a_resume() -> None:
    """`--resume` gets back the callback Tune saved in the first session (found when a sweep started
    before a setting existed died at its first step on the resume): later settings take their
    defaults, and the clock restarts with the new session."""
    import cloudpickle

    progress = SweepProgress({"a|seed=0": 10}, key_of, stream=io.StringIO(), tty=False)
    progress.start -= 3600.0  # the first session ran an hour
    for added in ("started_at", "first_report"):
        del progress.__dict__[added]  # as an older class saved it
    progress.__dict__["clock_budget_s"] = 60.0  # a setting the class has dropped since: ignored
    resumed = cloudpickle.loads(cloudpickle.dumps(progress))
    line = resumed.line([trial("a", Trial.RUNNING, step=5, time_total_s=5.0)])
    assert resumed.metric == "test_acc" and line.startswith("[0:00] trials 0 done, 1 running")
    assert line.endswith("left ~0:05")


def test_a_running_trial_has_run_since_its_last_report_in_this_session() -> None:
    """A trial reports at its epochs' ends (an hour apart at paper scale): the time left counts down
    between them. 5 steps left at 1 s a step, reported 3 s ago: 2 s; a report from before this session
    (a resumed sweep: the trial restarted from its checkpoint) counts from when the trial was first seen
    running in this one, not from the report."""
    assert seconds_left([TrialState("RUNNING", 5, 10, 5.0, since_report=3.0)], slots=1) == pytest.approx(2.0)
    assert seconds_left([TrialState("RUNNING", 5, 10, 5.0, since_report=9.0)], slots=1) == 0.0
    progress = SweepProgress({"a|seed=0": 10}, key_of, stream=io.StringIO(), tty=False)
    progress.started_at -= 10.0  # the session began 10 s ago; the trial reported 3 s ago
    fresh = trial("a", Trial.RUNNING, step=5, time_total_s=5.0, timestamp=time.time() - 3.0)
    (state,) = progress.states([fresh])
    assert 3.0 <= state.since_report < 4.0
    assert progress.line([fresh]).endswith("left ~0:02")
    resumed = SweepProgress({"a|seed=0": 10}, key_of, stream=io.StringIO(), tty=False)
    old = trial("a", Trial.RUNNING, step=5, time_total_s=5.0, timestamp=resumed.started_at - 60.0)
    assert resumed.states([old])[0].since_report == 0.0  # first seen running now
    resumed.running_since["a|seed=0"] -= 4.0  # ... and 4 s later
    assert 4.0 <= resumed.states([old])[0].since_report < 5.0 and resumed.line([old]).endswith("left ~0:01")
    old.set_status(Trial.PENDING)  # a retry restarts from its checkpoint, and its clock with it
    resumed.states([old])
    assert "a|seed=0" not in resumed.running_since


def test_a_resumed_trial_is_timed_at_its_pace_in_this_session() -> None:
    """A trial that ran at 10 s a step in a session whose cores it shared, and at 2 s a step since this one
    began, has its remaining steps timed at 2 s once it has reported twice here (before, at its lifetime
    average); its CPU-time bound likewise at this session's wall seconds per CPU second. A retry that
    restarts from its checkpoint (its step below the baseline's) starts the baseline again."""
    progress = BudgetProgress({"a|seed=0": 100}, key_of, 340.0, "test_acc", stream=io.StringIO(), tty=False)
    start = progress.started_at
    earlier = dict(step=40, time_total_s=400.0, timestamp=start - 600.0)  # 10 s a step, last session
    late = trial("a", Trial.RUNNING, **earlier)
    assert progress.states([late])[0].seconds_per_step == pytest.approx(10.0)
    restored = dict(training_iteration=5, iterations_since_restore=1)  # as Tune counts a restored trial's
    first = dict(step=50, time_total_s=420.0, timestamp=start + 20.0, cpu_seconds=300.0, **restored)
    late.update_last_result(first)
    assert progress.states([late])[0].pace_now is None  # one report here: no pace yet
    second = dict(step=60, time_total_s=440.0, timestamp=start + 40.0, cpu_seconds=316.0)
    second.update(training_iteration=6, iterations_since_restore=2)
    late.update_last_result(second)
    (state,) = progress.states([late])
    assert state.seconds_per_step == pytest.approx(2.0) and state.seconds_per_clock == pytest.approx(1.25)
    assert seconds_left([state], slots=1) == pytest.approx(40 * 2.0 - state.since_report)
    by_clock = budget_seconds_left([state], slots=1, clock_budget_s=340.0)
    assert by_clock == pytest.approx(24 * 1.25 - state.since_report)
    late.update_last_result(dict(step=30, time_total_s=460.0, timestamp=start + 60.0, cpu_seconds=320.0))
    assert progress.states([late])[0].pace_now is None and progress.first_report["a|seed=0"]["step"] == 30
    # a trial begun in this session is timed at its lifetime rate, its start-up and evaluations counted
    fresh = trial("a", Trial.RUNNING, **{**second, "training_iteration": 2, "iterations_since_restore": 2})
    assert progress.states([fresh])[0].seconds_per_step == pytest.approx(440.0 / 60)


def test_a_search_shows_the_gate_and_a_resumed_sweep_its_trials_last_reports() -> None:
    """The line shows the metric given (a search's scheduler metric, here labelled `gate`), each point's
    best so far; a sweep resumed shows at once what its trials last reported, each point's."""
    import cloudpickle

    steps = {key_of({"point": p, "seed": 0}): 10 for p in ("a", "b")}
    progress = BudgetProgress(steps, key_of, 60.0, "gate/w", label="gate", stream=io.StringIO(), tty=False)
    trials = [
        trial("a", Trial.RUNNING, step=5, time_total_s=5.0, evaluated=True, timestamp=2, **{"gate/w": 0.6}),
        trial("b", Trial.RUNNING, step=5, time_total_s=5.0, evaluated=True, timestamp=1, **{"gate/w": 0.8}),
    ]
    progress.on_trial_result(0, trials, trials[1], trials[1].last_result)
    assert "| best gate: b 0.80 |" in progress.line(trials)  # a's report has not come in yet
    resumed = cloudpickle.loads(cloudpickle.dumps(progress))
    assert "| best gate: a 0.60, b 0.80 |" in resumed.line(trials)  # in the grid's order
    assert "| best test_acc - |" in SweepProgress(steps, key_of, tty=False).line(trials)


def test_terminal_rewrites_one_line() -> None:
    out = io.StringIO()
    progress = SweepProgress({"a|seed=0": 10}, key_of, stream=out, tty=True)
    trials = [trial("a", Trial.RUNNING, step=5, time_total_s=5.0)]
    progress.show(trials, force=True)
    trials[0].set_status(Trial.TERMINATED)
    trials[0].update_last_result({**trials[0].last_result, "done": True})
    progress.on_experiment_end(trials)
    text = out.getvalue()
    assert text.count("\r") == 2 and text.count("\n") == 1 and text.endswith("\n")
    assert text.split("\r")[-1].rstrip().endswith("0 failed | best test_acc -")  # padded over the last


def test_output_modes() -> None:
    assert tune_output({}, key_of, quiet=True) == {"verbose": 0, "callbacks": []}
    (default,) = tune_output({}, key_of)["callbacks"]
    assert isinstance(default, SweepProgress) and tune_output({}, key_of)["verbose"] == 0
    verbose = tune_output({}, key_of, verbose=True)
    assert "verbose" not in verbose and not verbose["callbacks"][0].tty  # Tune's table as before


@pytest.mark.slow
def test_progress_line_in_a_real_tune_run(tmp_path) -> None:
    """A real local Ray and Tune run of three 4-step trials, two at a time: the line ends with all done,
    the best accuracy reported, and nothing left."""
    import shutil
    import tempfile

    import ray
    from ray import tune

    def trainable(config: dict) -> None:
        for step in range(1, 5):
            tune.report({"step": step, "test_acc": config["acc"] * step / 4, "evaluated": step % 2 == 0})

    accs = {"a": 0.2, "b": 0.9, "c": 0.5}
    steps = {f"{p}|seed=0": 4 for p in accs}
    out = io.StringIO()
    progress = SweepProgress(steps, lambda c: f"{c['point']}|seed=0", stream=out, every_s=0.0, tty=False)
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Unix socket paths stay short
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=ray_tmp)
    try:
        tuner = tune.Tuner(
            tune.with_resources(lambda c: trainable({**c, "acc": accs[c["point"]]}), {"cpu": 1}),
            param_space={"point": tune.grid_search(list(accs))},
            tune_config=tune.TuneConfig(max_concurrent_trials=2),
            run_config=tune.RunConfig(
                storage_path=str(tmp_path / "results"), verbose=0, callbacks=[progress]
            ),
        )
        results = tuner.fit()
    finally:
        ray.shutdown()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert results.num_errors == 0
    lines = out.getvalue().splitlines()
    # each point's best, in the grid's order, whichever trial reported last
    assert lines[-1].endswith(
        "trials 3 done, 0 running, 0 pending, 0 failed | best test_acc: a 0.20, b 0.90, c 0.50"
    )
    assert any("running" in line and "left ~" in line for line in lines[:-1])
