"""The analysis's one error type: input it cannot turn into a result (a store, a sweep, a file)."""


class AnalysisError(RuntimeError):
    """Input the analysis cannot turn into a result; the message says what is wrong and what to do."""
