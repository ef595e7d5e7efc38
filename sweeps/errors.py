"""The error a sweep that cannot start raises; `sweeps/run.py` prints its message and exits 2."""


class SweepError(RuntimeError):
    """A sweep that cannot start; the message says why and what to do instead."""
