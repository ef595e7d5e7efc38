"""The data: what a model is trained and tested on, with no torch in it. `tasks` is the registry (one
`Task` per task: its formats, samplers, test protocol, answer key, checks and every task-specific rule),
`formats` renders the paper's line formats, `sampling` draws operands and digit counts, `dialogue` makes
the student-teacher dialogues, `examples` is the rendered line, `datasets` the public API and the
`python -m arith.data dump|preview` command. Nothing here imports the model, the trainer or MLflow.
"""
