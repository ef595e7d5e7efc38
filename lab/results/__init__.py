"""docs/RESULTS.md from a store: the cpu reproduction's sweeps judged, the pre-search, the gpu scale.

    write_results(uri, out, paper_trial=...)   # the page, its figures in out.parent/results/figures/

The page is composed here from the store alone (every archive of docs/results/sweeps/ imported into it
first: `lab.plan.restore_archives`), the pre-search records (docs/presearch/), the gpu scale's banked
archives (`lab.gpu_section`), the recipe searches' cost-to-gate tables (`lab.search.costs`) and the fixed
prose beside it in docs/results/ (intro.md, presearch.md, notes.yaml), under a contents list
(`lab.contents`). A grid of the plan with no sweep in the
store is listed as not yet run, with the reason, unless docs/results/unarchived/<grid>.md holds its
section: measured before the sweeps were archived, it is included verbatim and not re-judged.
`python -m lab.reproduce` runs the plan's sweeps, then calls this.
"""
