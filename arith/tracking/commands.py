"""The sweep command lines the store records: a sweep's parent run is tagged with the command that ran it,
and its sweep folder keeps the arguments it started with, by which a later session finds it again. What
identifies a sweep is its command line less where it runs and reports (`sweep_identity`); `--seeds` is
written so that sweeps/run.py reads it back as the same seeds (`seeds_argument`). Here, apart from
sweeps/, so that the analysis reading a tagged command and the sweep writing it share one rule.
"""

from __future__ import annotations

#: the flags of sweeps/run.py that say where a sweep runs and reports, not what it runs (value or none)
PLACE_FLAGS = {
    "--tracking-uri": True,
    "--storage-path": True,
    "--address": True,
    "--ray-temp-dir": True,
    "--resume": False,
    "--dry-run": False,
    "--quiet": False,
    "--verbose": False,
}


def sweep_identity(argv: list[str]) -> list[str]:
    """What a sweep runs, as its command line says it: `argv` less the flags of where it runs and reports
    (`PLACE_FLAGS`), so that the same sweep run against another store or Ray is known as the same."""
    out, skip = [], False
    for word in argv:
        flag = word.split("=", 1)[0]
        if skip:
            skip = False
        elif flag in PLACE_FLAGS:
            skip = PLACE_FLAGS[flag] and "=" not in word
        else:
            out.append(word)
    return out


def seeds_argument(seeds: int | tuple[int, ...]) -> str:
    """`--seeds` as sweeps/run.py reads it back: a count K as "K", explicit seeds as "1,2", and one explicit
    seed as "100," (a bare "100" would be a count of a hundred seeds)."""
    if isinstance(seeds, int):
        return str(seeds)
    return ",".join(map(str, seeds)) + ("," if len(seeds) == 1 else "")
