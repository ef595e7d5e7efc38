"""Training and evaluation: `train` is the one trainer (`python -m arith.training`, options in `cli`), with
`setup` (what a trial is built from), `step` (one optimiser step, what the benchmarks time), `batching`,
`optim`, `hardware` (device, precision, threads, compile), `checkpoints`, `decoding` (greedy replies, what
`arith.ask` answers with), `evaluate` (accuracy grids, kept wrong answers) and `metrics` (what an
evaluation logs). It logs through a tracker from `arith.tracking`; no MLflow is imported here.
"""
