"""docs/RESULTS.md's pages open with a contents list whose links land where GitHub anchors the headings."""

from __future__ import annotations

import re
from pathlib import Path

from lab.contents import contents, github_anchor, headings, with_contents
from lab.plan import PLAN, grids

ROOT = Path(__file__).resolve().parents[1]

PAGE = """# Results

The intro.

## How the claims are judged

### nl_mix

```
## not a heading: inside a code fence
```

## The `cpu_recipe` scale: a recipe per task

## mul_format

### Tables

## nl_mix

### Tables

## The `gpu` scale: banked from lent GPUs
"""


def test_anchors_are_githubs_punctuation_dropped_and_repeats_numbered() -> None:
    heading = "The `cpu_recipe` scale: a recipe per task"
    assert github_anchor(heading) == "the-cpu_recipe-scale-a-recipe-per-task"
    assert github_anchor("Learning check (CI)") == "learning-check-ci"
    anchors = {(level, text): anchor for level, text, anchor in headings(PAGE)}
    # the second nl_mix (a section) follows the first (a subsection): GitHub numbers it over every level
    assert anchors[(3, "nl_mix")] == "nl_mix"
    assert anchors[(2, "nl_mix")] == "nl_mix-1"
    assert [anchor for _, text, anchor in headings(PAGE) if text == "Tables"] == ["tables", "tables-1"]
    assert not any("code fence" in text for _, text, _ in headings(PAGE))


def test_the_contents_list_every_section_and_put_the_grids_on_one_line() -> None:
    listed = contents(PAGE, grids={"mul_format", "nl_mix"})
    assert listed.splitlines()[2:] == [
        "- [How the claims are judged](#how-the-claims-are-judged)",
        "- [The `cpu_recipe` scale: a recipe per task](#the-cpu_recipe-scale-a-recipe-per-task)",
        "- the grids' sections: [mul_format](#mul_format) · [nl_mix](#nl_mix-1)",
        "- [The `gpu` scale: banked from lent GPUs](#the-gpu-scale-banked-from-lent-gpus)",
    ]
    page = with_contents(PAGE, grids={"mul_format", "nl_mix"})
    assert page.index("**Contents**") > page.index("The intro.")
    assert page.index("**Contents**") < page.index("## How the claims are judged")
    assert with_contents("# A page\n\nno sections\n") == "# A page\n\nno sections\n"


def test_every_in_page_link_of_the_results_pages_lands_on_a_heading() -> None:
    """The committed docs/RESULTS.md and its pages (written by `python -m lab.results`): the front page opens
    with the claims table; each page with sections has a contents list naming every section, and each of
    its `(#anchor)` links is an anchor of that page."""
    front = (ROOT / "docs" / "RESULTS.md").read_text()
    assert front.split("\n\n")[2].startswith("| the paper's claim | paper | verdict | effect | 95% CI |")
    pages = sorted((ROOT / "docs" / "results" / "report").glob("*.md"))
    searched = {part.grid for part in PLAN if part.search}  # a search's parts: in its own page
    assert {p.stem for p in pages} == {"about", "findings", "presearch", "searches", "gpu"} | (
        set(grids()) - searched
    )
    for path in pages:
        page = path.read_text()
        anchors = {anchor for _, _, anchor in headings(page)}
        links = set(re.findall(r"\]\(#([^)\s]+)\)", page))
        assert links <= anchors, f"{path.name}: links without a heading: {sorted(links - anchors)}"
        sections = {anchor for level, _, anchor in headings(page) if level == 2}
        if len(sections) > 1:
            assert page.count("**Contents**") == 1 and sections <= links, path.name
    findings = (ROOT / "docs" / "results" / "report" / "findings.md").read_text()
    assert "findings-at-a-glance" in findings
