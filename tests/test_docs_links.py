"""The documents a reader follows: every relative link in README.md and docs/ leads somewhere, and the two
pages a newcomer reads first stay short enough to read in one sitting.

A link resolves as GitHub resolves it: relative to the page that holds it, to a file or folder of the
repository; a `#anchor` on a markdown page must name one of that page's headings by GitHub's anchor rule
(`lab.contents.headings`, the rule docs/RESULTS.md's contents list is written by).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.contents import headings

ROOT = Path(__file__).resolve().parents[1]

#: README.md and every markdown page under docs/ (generated ones included: their links are read the same way)
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

#: the limits of the two pages a newcomer reads first, in bytes
README_MAX_BYTES = 12_000
DESIGN_MAX_BYTES = 15_000

_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def links(page: str) -> list[str]:
    """The targets of the page's inline links and images, outside code fences and code spans (a link's
    text may run over a line break, as an image's long alt text does)."""
    prose, fenced = [], False
    for line in page.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            prose.append("")
        else:
            prose.append("" if fenced else line)
    targets: list[str] = []
    for paragraph in re.split(r"\n\s*\n", "\n".join(prose)):
        targets.extend(_LINK.findall(_CODE_SPAN.sub("", paragraph)))
    return targets


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of the markdown page at `path` that leads nowhere (or out of `root`), with why."""
    broken = []
    for target in links(path.read_text()):
        if _SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif not destination.resolve().is_relative_to(root.resolve()):
            broken.append(f"{target}: outside the repository")
        elif anchor and destination.suffix == ".md":
            anchors = {a for _, _, a in headings(destination.read_text())}
            if anchor not in anchors:
                broken.append(f"{target}: no heading with that anchor")
    return broken


def test_the_link_reader_finds_links_and_skips_code() -> None:
    page = (
        'See [a](docs/A.md#x) and ![pic](img/p.png "title") and [web](https://example.org).\n'
        "`[not](a link)` stays code.\n```\n[nor](this)\n```\n[nested [brackets]](b.md) and ![an alt text\n"
        "over two lines](img/q.png), `code over\na line [no](link)`.\n\n`an open tick and [c](c.md)\n"
    )
    assert links(page) == ["docs/A.md#x", "img/p.png", "https://example.org", "b.md", "img/q.png", "c.md"]


def test_a_broken_link_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Title\n\n## A section\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-section) [self](#top) [missing](nope.md) [bad anchor](other.md#no-such)\n# Top\n"
    )
    assert broken_links(page, root=tmp_path) == [
        "nope.md: no such file",
        "other.md#no-such: no heading with that anchor",
    ]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert not broken_links(path), f"{path.relative_to(ROOT)}: {broken_links(path)}"


def test_the_readme_and_the_design_map_stay_short() -> None:
    """README.md is read in one sitting and DESIGN.md is a map; what is longer has a page of its own."""
    readme = len((ROOT / "README.md").read_bytes())
    design = len((ROOT / "docs" / "DESIGN.md").read_bytes())
    assert readme <= README_MAX_BYTES, f"README.md is {readme} bytes (at most {README_MAX_BYTES})"
    assert design <= DESIGN_MAX_BYTES, f"docs/DESIGN.md is {design} bytes (at most {DESIGN_MAX_BYTES})"


#: the packages whose every module docs/CONTRACTS.md's map names
MAPPED_PACKAGES = ("arith", "experiments", "sweeps", "analysis")


def module_map() -> dict[str, str]:
    """docs/CONTRACTS.md's map of modules, folder -> the text of its lines: a line naming `folder/` opens
    it, nested by indentation (a name at the same depth or less closes it); every other line (a module, a
    description) belongs to the folder open."""
    page = (ROOT / "docs" / "CONTRACTS.md").read_text()
    block = page.split("## Modules, a line each", 1)[1].split("```", 2)[1]
    text: dict[str, str] = {}
    open_folders: list[tuple[int, str]] = []
    for line in block.splitlines():
        indent, first = len(line) - len(line.lstrip()), (line.split() or [""])[0]
        if first and indent < 28:  # a name, not a description's next line: it closes deeper folders
            open_folders = [(i, f) for i, f in open_folders if i < indent]
            if first.endswith("/"):
                parent = open_folders[-1][1] if open_folders else ""
                open_folders.append((indent, parent + first))
        folder = open_folders[-1][1] if open_folders else ""
        text[folder] = text.get(folder, "") + line + "\n"
    return text


def test_the_module_map_names_every_module_where_it_lives_and_nothing_gone() -> None:
    mapped = module_map()
    for package in MAPPED_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__init__.py":
                continue
            folder = path.parent.relative_to(ROOT).as_posix() + "/"
            assert re.search(rf"(?<![\w/]){re.escape(path.name)}", mapped.get(folder, "")), (
                f"docs/CONTRACTS.md's map does not name {folder}{path.name}"
            )
    for folder, text in mapped.items():
        if folder.split("/")[0] not in MAPPED_PACKAGES:
            continue
        for name in re.findall(r"(?<![\w/.])(\w+\.py)\b", text):
            assert (ROOT / folder / name).exists(), f"docs/CONTRACTS.md's map names {folder}{name}: gone"
