"""The science: "Positional Description Matters for Transformers Arithmetic" (Shen et al. 2023). `config`
is the leaf every layer reads; `data` has no torch, `model` is GPT-2 with a position scheme, `training`
the trainer and evaluator, `tracking` the only place MLflow is imported. Nothing here imports Ray."""
