"""The paper's experiments, a module each (or a module per section, for experiments that share checks).

A module here declares `EXPERIMENTS`, a tuple of `experiments.claim.Experiment`; `experiments.registry`
finds every module of this folder by itself, so a new experiment is one new file.
"""
