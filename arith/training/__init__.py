"""Training and evaluation: `train` is the one trainer (`python -m arith.training`, options in `cli`),
with `batching` (tokenised, length-bucketed batches), `optim` (AdamW and the schedule), `hardware`
(device, precision, threads, compile), `checkpoints` and `evaluate` (greedy decoding, accuracy grids,
memorisation, kept wrong answers) with `digit_errors` (where wrong answers err). It logs through a
tracker from `arith.tracking`; no MLflow is imported here.
"""
