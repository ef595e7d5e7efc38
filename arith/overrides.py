"""The command line's --set and --only pairs (KEY=VALUE, dotted config keys) read into the overrides and
the point selection a sweep or a trial takes."""

from __future__ import annotations

import typing

from arith.errors import ConfigError


def parse_set(pairs: typing.Iterable[str]) -> dict[str, str]:
    """``["data.max_digits=5", ...]`` -> ``{"data.max_digits": "5"}``, rejecting malformed pairs."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def parse_only(pairs: typing.Iterable[str]) -> dict[str, tuple[str, ...]]:
    """`--only` pairs -> setting -> the values a kept point may have: a setting named twice keeps the points
    with either value (``--only model.position=none --only model.position=learned``); settings apart must
    all match. Malformed pairs are refused as `parse_set` refuses them."""
    out: dict[str, tuple[str, ...]] = {}
    for pair in pairs:
        ((key, value),) = parse_set([pair]).items()
        out[key] = (*out.get(key, ()), value)
    return out
