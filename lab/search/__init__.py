"""Recipe searches: what a recipe may change, declared (`declared`), run as a Ray Tune sweep under ASHA
(`sweep`, `asha`), read back from the store as each configuration's cost to the gate (`costs`, `figure`,
`view`, `report`). `python -m lab.search --grid NAME` prints a search's table from the store.
"""
