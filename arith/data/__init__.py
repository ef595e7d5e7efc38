"""The data: what a model is trained and tested on, with no torch in it. `tasks` is the registry of
tasks and `datasets` the public API and `python -m arith.data`; nothing here imports the model or MLflow.
"""
