"""The paper's experiments as plain, torch-free declarations, read alike by `sweeps` (to run them) and
`analysis` (to judge them).

- `grid`: what a grid is (base config x axes -> points, the paper labels each point reproduces);
- `claim`: an `Experiment` (a grid and its claims) and a `Claim` (a sentence of the paper and its check);
- `catalog/`: the experiments themselves, a module per experiment or section; `registry` collects them;
- `setups`: the paper's appendix setups the grids share;
- `recipes`: the cpu_recipe scale's recipes, written once and declared on the experiments that train at them;
- `paper` (+ paper_tables.csv): the paper's published numbers and how a sweep's cells map onto them;
- `cells`, `intervals`, `verdicts`: the rules a claim's check is written in (competence gate, contrasts,
  95% intervals, verdicts with Holm's correction).
"""
