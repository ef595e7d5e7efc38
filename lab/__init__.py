"""The lab: this project's own research bookkeeping, in a room of its own. The tool (`arith`, `experiments`,
`sweeps`, `analysis`) imports nothing from here.

- `lab.catalog`: the lab's grids (the pre-searches' variants of the catalogue's experiments, the cpu
  preset's tuning grids) and its recipe searches, registered through the experiments' plugin hook
  ($POSDESC_EXPERIMENTS): importing `lab` adds `lab.catalog` to it, for this process and the ones it starts.
- `lab.recipes`: the recipes the pre-searches tried and rejected, and what each measured.
- `lab.search`: recipe searches (`python -m lab.sweep --search NAME` runs one under ASHA; `python -m
  lab.search --grid NAME` reads its cost to the gate), `lab.choice` their declared choice rules.
- `lab.plan`, `lab.run_part`, `lab.reproduce`: docs/results/plan.yaml, the cpu reproduction run part by part
  (`python -m lab.reproduce`), its archives; `lab.results` writes docs/RESULTS.md from the store
  (`python -m lab.results`), with `lab.contents`, `lab.spend`, `lab.reach`, `lab.budget`, `lab.presearch`.
- `lab.gpu_plan`, `lab.bank`, `lab.gpu_section`: the batches a lent GPU runs (`python -m lab.bank next`)
  and their page.
- `lab.sweep`: `python sweeps/run.py` with the lab's grids and searches; `lab.report`: `python -m analysis`
  reading a grid's plan parts as one sweep.
- What the lab reads of the tool's records that the tool itself does not: `lab.searches` (the searches'
  registry), `lab.paper_trial`, `lab.sweep_sessions`, `lab.training_records` (a trial's sessions and
  machines), `lab.analysis_claims` (the claims' glance across grids), `lab.analysis_output`.
"""

from __future__ import annotations

import os

from experiments.registry import PLUGINS_ENV

#: the lab's module of experiments, as the registry's plugin hook names it
LAB_EXPERIMENTS = "lab.catalog"


def register() -> None:
    """Add the lab's grids and searches to the registry (idempotent); child processes inherit it."""
    names = [name.strip() for name in os.environ.get(PLUGINS_ENV, "").split(",") if name.strip()]
    if LAB_EXPERIMENTS not in names:
        os.environ[PLUGINS_ENV] = ",".join([*names, LAB_EXPERIMENTS])


register()
