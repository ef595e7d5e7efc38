"""A table cell kept readable: a verdict's reason cut at a clause boundary, its brackets closed and "…"
where text is dropped (`clip_reason`); a long command a cell quotes moved to a numbered note under the
table, written once however many rows cite it (`command_notes`). For docs/RESULTS.md's summary tables,
whose cells are read across a row, not as paragraphs."""

from __future__ import annotations

import re

#: the longest "why, after" cell of the before-and-after table, in characters
SHORT_WHY = 220
#: what stands where a reason's text is dropped
DROPPED = "…"
_CLOSE = {"(": ")", "[": "]"}


def _still_open(text: str) -> str:
    """The closers of the brackets `text` leaves open, innermost first: what a cut after it appends."""
    opened: list[str] = []
    for char in text:
        if char in _CLOSE:
            opened.append(_CLOSE[char])
        elif opened and char == opened[-1]:
            opened.pop()
    return "".join(reversed(opened))


def _clause_ends(text: str) -> list[tuple[int, str]]:
    """Where each "; " of `text` ends a clause, with the closers of the brackets still open there."""
    return [(i, _still_open(text[:i])) for i in range(len(text)) if text.startswith("; ", i)]


def clip_reason(text: str, limit: int = SHORT_WHY) -> str:
    """A verdict's reason cut to its first clause (the "; "-separated parts outside any parenthesis) and,
    where that is longer than `limit`, to the longest run of its inner clauses that fits: each cut is at a
    clause boundary, says "…" where text is dropped and closes the parentheses it leaves open."""
    ends = _clause_ends(text)
    top = next((i for i, shut in ends if not shut), len(text))
    first, rest = text[:top], f"; {DROPPED}" if top < len(text) else ""
    if len(first) + len(rest) <= limit:
        return first + rest
    inner = [f"{first[:i]}; {DROPPED}{shut}{rest}" for i, shut in ends if i < top]
    fitting = [cut for cut in inner if len(cut) <= limit]
    return fitting[-1] if fitting else _clip_at_word(first, limit - len(rest)) + rest


def _clip_at_word(text: str, limit: int) -> str:
    """`text` cut at the last space that leaves room for "…" and the brackets still open there: a clause
    too long for the table with no inner clause to cut at."""
    for end in range(min(len(text), limit), 0, -1):
        if text[end - 1] == " ":
            cut = f"{text[: end - 1]} {DROPPED}{_still_open(text[: end - 1])}"
            if len(cut) <= limit:
                return cut
    return DROPPED


#: a command quoted in a cell (between backticks) longer than this many characters moves to a note
COMMAND_IN_CELL = 80
_QUOTED = re.compile(r"`([^`]+)`")


def command_notes(rows: list[dict[str, object]]) -> tuple[list[dict[str, object]], str]:
    """The rows with each long quoted command (a benchmark's full command line, say) replaced by "command
    [k]", and the numbered notes that quote them under the table: a cell keeps its numbers and its reason,
    and a command several rows cite is written once. '' for the notes when no cell quotes one."""
    commands: list[str] = []

    def cite(match: re.Match[str]) -> str:
        command = match.group(1)
        if len(command) <= COMMAND_IN_CELL:
            return match.group(0)
        if command not in commands:
            commands.append(command)
        return f"command [{commands.index(command) + 1}]"

    cited = [{k: _QUOTED.sub(cite, v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
    notes = "".join(f"\n[{k}] `{command}`\n" for k, command in enumerate(commands, 1))
    return cited, f"\nCommands the table cites:\n{notes}" if notes else ""
