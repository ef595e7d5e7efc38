"""The registry of position schemes, `SCHEMES` by their `model.position` name: apart from the interface
(`arith.model.positions`) so that a scheme in a module of its own (`arith.model.coupling`) imports the
interface and this registry imports both, with no cycle."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from arith.config import ModelConfig, choice
from arith.model.coupling import Coupling
from arith.model.positions import (
    Abacus,
    Learned,
    ModelShape,
    NoPosition,
    PositionScheme,
    RandomEmbed,
    Randomized,
)

#: every position scheme by its `model.position` name
SCHEMES: dict[str, type[PositionScheme]] = {
    scheme.name: scheme for scheme in (Learned, NoPosition, RandomEmbed, Randomized, Abacus, Coupling)
}
#: the names, in registry order (the tests run every one)
POSITION_SCHEMES: tuple[str, ...] = tuple(SCHEMES)


def scheme_class(name: str) -> type[PositionScheme]:
    """The registered scheme called `name`; an unknown name fails listing the valid ones."""
    choice("model.position", name, SCHEMES)
    return SCHEMES[name]


def make_scheme(
    name: str,
    *,
    n_embd: int,
    n_head: int,
    n_positions: int,
    vocab_size: int,
    digit_ids: Iterable[int] = (),
    digit_order: Sequence[str] = (),
    **settings: Any,
) -> PositionScheme:
    """The scheme called `name` for a model of the given sizes; `settings` are ModelConfig fields
    (``n_hash=8``, ``abacus_max_offset=3``), every other one at its default."""
    shape = ModelShape(n_embd, n_head, n_positions, vocab_size, tuple(digit_ids), tuple(digit_order))
    return scheme_class(name).build(ModelConfig(**settings), shape)
