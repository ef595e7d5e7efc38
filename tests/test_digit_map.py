"""One digit map, from the training range: a run trained on at most m digits of a table the paper made at
M digits reads its m-digit cells beside the paper's M-digit ones at every scale."""

from __future__ import annotations

from experiments.paper import MAP_DIGITS, paper_cells, training_range_map
from sweeps.scales import get_scale

IDENTITY = {n: n for n in MAP_DIGITS}
CPU = {n: get_scale("cpu").digits(n) for n in MAP_DIGITS}


def basic_point(max_digits: int) -> dict:
    return {
        "data.task": "mul",
        "data.format": "basic",
        "data.max_digits": max_digits,
        "data.augment": "none",
        "data.one_digit_weight": 1.0,
        "model.position": "learned",
        "model.init": "random",
        "paper_table": ("tb:basic-5",),  # the trial's labels, as analysis.sweep.tag_columns reads the tag
    }


def test_the_cpu_scales_map_already_sends_the_papers_maximum_to_the_runs() -> None:
    assert training_range_map(CPU, 3, 5) == CPU  # 5 -> 3: kept as it is, beyond included (6, 7, 8 -> 4)


def test_a_set_max_digits_at_an_identity_scale_maps_m_to_m_like_the_cpu_scale() -> None:
    """gpu scale (no digit shrinking) with --set data.max_digits=3 on a point of the paper's 5-digit table:
    the same map as the cpu scale gives, so a run passes or fails the gate alike at both scales."""
    moved = training_range_map(IDENTITY, 3, 5)
    assert [moved[n] for n in range(1, 10)] == [CPU[n] for n in range(1, 10)] == [1, 2, 3, 3, 3, 4, 4, 4, 5]
    assert training_range_map(IDENTITY, 5, 5) == IDENTITY
    assert training_range_map(IDENTITY, float("nan"), 5) == IDENTITY


def test_paper_cells_of_a_three_digit_run_stand_for_the_papers_five_digit_cells_at_any_scale() -> None:
    for sweep_map in (IDENTITY, CPU):
        cells = paper_cells(basic_point(3), None, final=True, digit_map=sweep_map)
        three = cells[(cells["row_digits"] == 3) & (cells["col_digits"] == 3)].iloc[0]
        assert (three["paper_row_digits"], three["paper_col_digits"]) == (5, 5)
        assert sorted(cells["col_digits"].unique()) == [1, 2, 3]
    # trained on the paper's own 5 digits at an identity scale: every cell is itself
    cells = paper_cells(basic_point(5), None, final=True, digit_map=IDENTITY)
    assert (cells["row_digits"] == cells["paper_row_digits"]).all()
