"""The paper's experiments, a module each (or per section), each declaring `EXPERIMENTS`: found by
`experiments.registry` by listing this folder, so a new experiment is one new file.
"""
