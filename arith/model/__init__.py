"""The model: transformers' GPT-2 with an interchangeable position scheme. `positions` holds the scheme
interface and the registry `SCHEMES` (each scheme a small class with its draw state, checks and build),
`coupling` one scheme in a module of its own, `gpt` the `ArithModel` (build, save, load from a folder),
`attention` the attention kernel every model runs (registered with transformers on import) and
`tokenizer` the digit-aware tokenizer. It reads the data layer for a task's digit order, never the
trainer or MLflow: a model in a store is loaded by `arith.tracking.models`.
"""
