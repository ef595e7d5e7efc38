"""Training and evaluation: `train` is the one trainer (`python -m arith.training`, options in `cli`),
with `step` (one optimiser step and the check of its losses, what the benchmarks time), `batching`
(tokenised, length-bucketed batches), `optim` (AdamW and the schedule), `hardware` (device, precision,
threads, compile; the attention kernel is the model's, `arith.model.attention`), `checkpoints` (and the
weights' digest a trial is tagged with), `decoding` (greedy replies and whether each is right: what
`arith.ask` answers with), `evaluate` (accuracy grids, memorisation, kept wrong answers) and `metrics`
(what an evaluation logs; the target-accuracy probe). It logs through a tracker from `arith.tracking`,
which also draws where wrong answers err (`arith.tracking.digit_errors`); no MLflow is imported here.
"""
