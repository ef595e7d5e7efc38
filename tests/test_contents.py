"""docs/RESULTS.md opens with a contents list whose links land where GitHub anchors the headings."""

from __future__ import annotations

import re
from pathlib import Path

from lab.contents import contents, github_anchor, headings, with_contents
from lab.plan import grids

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


def test_every_in_page_link_of_the_results_page_lands_on_a_heading() -> None:
    """The committed docs/RESULTS.md (written by `python -m lab.results`): its
    contents list names every section, and each of its `(#anchor)` links is an anchor of the page."""
    page = (ROOT / "docs" / "RESULTS.md").read_text()
    assert page.count("**Contents**") == 1
    anchors = {anchor for _, _, anchor in headings(page)}
    links = set(re.findall(r"\]\(#([^)\s]+)\)", page))
    assert links and links <= anchors, f"links without a heading: {sorted(links - anchors)}"
    sections = {anchor for level, _, anchor in headings(page) if level == 2}
    assert sections <= links, f"sections the contents leave out: {sorted(sections - links)}"
    assert {"findings-at-a-glance", "mul_format"} <= links and set(grids()) & links
