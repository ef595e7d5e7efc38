"""The sweep command lines the store records, by which a later session finds a sweep again (its identity:
the command line less where it runs and reports). Apart from sweeps/, so that the analysis reading a tagged
command and the sweep writing it share one rule."""

from __future__ import annotations

import shlex

#: the flags of sweeps/run.py that say where a sweep runs and reports, not what it runs (-> takes a value)
PLACE_FLAGS = {
    **dict.fromkeys(("--tracking-uri", "--storage-path", "--address", "--ray-temp-dir"), True),
    **dict.fromkeys(("--resume", "--dry-run", "--quiet", "--verbose"), False),
}

#: the flags of how Tune runs a sweep's trials: `Tuner.restore` keeps the values a sweep started with, so on
#: `--resume` they pick no sweep and change nothing (`unapplied_on_resume` says so)
RESTORED_FLAGS = {"--max-concurrent": True, "--max-failures": True}


def sweep_identity(argv: list[str]) -> list[str]:
    """`argv` less `PLACE_FLAGS`: the same sweep run against another store or Ray is known as the same."""
    return without_flags(argv, PLACE_FLAGS)


def without_flags(argv: list[str], flags: dict[str, bool]) -> list[str]:
    """`argv` less `flags` (flag -> whether it takes a value), as `--flag v` or `--flag=v`."""
    out, skip = [], False
    for word in argv:
        flag = word.split("=", 1)[0]
        if skip:
            skip = False
        elif flag in flags:
            skip = flags[flag] and "=" not in word
        else:
            out.append(word)
    return out


def flag_values(argv: list[str], flags: dict[str, bool]) -> dict[str, str]:
    """The value each of `flags` that takes one has in `argv` (the last, as argparse reads it)."""
    values = {}
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if flags.get(flag):
            if eq:
                values[flag] = value
            elif i + 1 < len(argv):
                values[flag] = argv[i + 1]
    return values


def same_sweep(started: list[str], resumed: list[str]) -> bool:
    """Whether a `--resume` command names the sweep started as `started` (`RESTORED_FLAGS` aside)."""
    return without_flags(started, RESTORED_FLAGS) == without_flags(resumed, RESTORED_FLAGS)


def unapplied_on_resume(started: list[str], resumed: list[str]) -> list[str]:
    """A line for each of `RESTORED_FLAGS` the resume command sets otherwise than the sweep started."""
    was, asked = flag_values(started, RESTORED_FLAGS), flag_values(resumed, RESTORED_FLAGS)
    return [
        f"{flag} {value} is not applied: a resumed sweep runs as it started "
        f"({f'{flag} {was[flag]}' if flag in was else f'without {flag}'}; Tune restores its settings)"
        for flag, value in asked.items()
        if was.get(flag) != value
    ]


def seeds_argument(seeds: int | tuple[int, ...]) -> str:
    """`--seeds` as sweeps/run.py reads it back: a count as "K", seeds as "1,2", one seed as "100," (a bare
    "100" would be a count)."""
    if isinstance(seeds, int):
        return str(seeds)
    return ",".join(map(str, seeds)) + ("," if len(seeds) == 1 else "")


def resuming(sweep: str, started: list[str], resumed: list[str]) -> str:
    """What `--resume` prints: the sweep, the command that started it, and `unapplied_on_resume`."""
    said = f"resuming sweep {sweep}, started as: {shlex.join(started)}"
    return "\n".join([said, *unapplied_on_resume(started, resumed)])
