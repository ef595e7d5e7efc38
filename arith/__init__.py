"""The science: "Positional Description Matters for Transformers Arithmetic" (Shen et al. 2023).

`config` is the leaf every layer reads (plain typed settings, no registry); `validation` checks a config
against the registries. The sub-packages show the architecture: `data` (tasks, formats, sampling,
dialogues: no torch), `model` (GPT-2 with a position scheme, tokenizer), `training` (the trainer and the
evaluator) and `tracking` (MLflow, the only place it is imported, and the archives). `ask` questions a
trained model. Nothing here imports Ray.
"""
