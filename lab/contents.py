"""A markdown page's table of contents, linked the way GitHub anchors its headings.

    with_contents(page)   # the page with a contents list before its first `## ` section

docs/RESULTS.md runs to thousands of lines: a reader looking for one grid's section, or for the findings,
needs a way in that does not depend on a viewer's outline. Every `## ` heading is listed; the grids' sections
(headings named exactly as a grid, e.g. `## nl_mix`) share one line, since there is one a grid. Anchors follow
GitHub's rule (lowercase; punctuation but `-` and `_` dropped; spaces to `-`; the n-th repeat of a slug,
counted over every heading level, gets `-n`), so a link to `## nl_mix` after a `### nl_mix` reads `#nl_mix-1`,
as GitHub renders it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterator

_DROPPED = re.compile(r"[^\w\- ]", re.UNICODE)


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text (before repeats are numbered)."""
    return _DROPPED.sub("", heading.strip().lower()).replace(" ", "-")


def _heading_lines(page: str) -> Iterator[tuple[int, int, str]]:
    """Each heading of `page` outside code fences: (its line's offset in `page`, level, text)."""
    fenced, offset = False, 0
    for line in page.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"(#{1,6}) (.+)", line)):
            yield offset, len(match.group(1)), match.group(2).strip()
        offset += len(line)


def headings(page: str) -> list[tuple[int, str, str]]:
    """Each heading of `page` outside code fences: (level, text, anchor), anchors numbered as GitHub's."""
    seen: Counter[str] = Counter()
    out = []
    for _, level, text in _heading_lines(page):
        base = github_anchor(text)
        out.append((level, text, base if not seen[base] else f"{base}-{seen[base]}"))
        seen[base] += 1
    return out


def contents(page: str, grids: Collection[str] = ()) -> str:
    """A bullet list of the page's `## ` sections; consecutive ones named as one of `grids` share a line."""
    lines: list[str] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            lines.append("- the grids' sections: " + " · ".join(run))
            run.clear()

    for level, text, anchor in headings(page):
        if level != 2:
            continue
        link = f"[{text}](#{anchor})"
        if text in grids:
            run.append(link)
            continue
        close_run()
        lines.append(f"- {link}")
    close_run()
    return "**Contents**\n\n" + "\n".join(lines) + "\n" if lines else ""


def with_contents(page: str, grids: Collection[str] = ()) -> str:
    """`page` with its contents list inserted before its first `## ` heading (unchanged without one)."""
    listed = contents(page, grids)
    first = next((offset for offset, level, _ in _heading_lines(page) if level == 2), None)
    if not listed or first is None:
        return page
    return page[:first] + listed + "\n" + page[first:]
