"""The paper's experiments as plain, torch-free declarations, read alike by `sweeps` (to run them) and
`analysis` (to judge them): `grid` (a base config x axes -> points), `claim` (an `Experiment`: a grid and
its claims), `catalog/` (the experiments, collected by `registry`), `setups` and `recipes` (what the grids
share), `paper` (the paper's published numbers), and the rules a claim's check is written in: `cells`,
`verdicts`, `intervals`, `decide`.
"""
