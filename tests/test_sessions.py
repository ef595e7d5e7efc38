"""The record of where a trial trained (`arith.training.sessions`): sessions opened, read back, named."""

from __future__ import annotations

from arith.tracking.schema import SESSIONS_TAG
from arith.training import sessions as record
from lab.training_records import machine_at, read_sessions


def test_sessions_on_one_machine_read_as_one_line_and_each_step_has_its_machine() -> None:
    first = record.opened([], 0, "EPYC Zen 3", "fp32 kernels")
    record.advanced(first, 2360, cpu_seconds=6000.0, train_seconds=6100.0)
    again = record.opened(first, 2360, "EPYC Zen 3", "fp32 kernels")
    record.advanced(again, 4000, cpu_seconds=1200.0, train_seconds=1300.0)
    moved = record.opened(again, 4000, "EPYC Zen 5", "native")
    record.advanced(moved, 8000, cpu_seconds=2400.0, train_seconds=2500.0)
    # the two sessions on Zen 3 together (7,200 CPU-s), then Zen 5's
    assert record.trained_on_line(moved) == (
        "steps 0-4,000 on EPYC Zen 3 (bf16 on fp32 kernels), 2.0 CPU-h in 2 sessions; "
        "steps 4,000-8,000 on EPYC Zen 5 (bf16 native), 40 CPU-min"
    )
    assert [machine_at(moved, s) for s in (1, 2360, 2361, 4000, 4001, 8000, 8001)] == [
        "EPYC Zen 3",
        "EPYC Zen 3",
        "EPYC Zen 3",
        "EPYC Zen 3",
        "EPYC Zen 5",
        "EPYC Zen 5",
        "",
    ]
    assert read_sessions(record.tags(moved)[SESSIONS_TAG]) == moved
    # a session just opened on the same machine (no step yet) is not counted as one more
    reopened = record.opened(moved, 8000, "EPYC Zen 5", "native")
    zen5 = "steps 4,000-8,000 on EPYC Zen 5 (bf16 native), 40 CPU-min"
    assert record.trained_on_line(reopened).endswith(zen5)


def test_a_session_that_trained_nothing_is_dropped_and_a_bad_tag_reads_as_none() -> None:
    done = record.opened([], 0, "m", "none")
    record.advanced(done, 100, cpu_seconds=10.0, train_seconds=10.0)
    evaluated_again = record.opened(record.opened(done, 100, "n", "none"), 100, "n", "none")
    assert [s["machine"] for s in evaluated_again] == ["m", "n"]  # the empty one between is gone
    assert read_sessions("not json") == [] and read_sessions(None) == [] and read_sessions('[{"x": 1}]') == []
