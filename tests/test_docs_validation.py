"""docs/validation.md: every family row carries one verdict of the scale, and the counts follow the rows."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERDICTS = ("reproduced", "in part", "not reproduced", "no published finding")
FAMILIES = {"behavior", "evidence", "information", "attributes", "attack"}


def verdicts(page: str) -> dict[str, str]:
    """Family -> the verdict that opens the last cell of its row in the Validation table."""
    out = {}
    for line in page.splitlines():
        m = re.match(r"\| \[(\w+)\]\(families/", line)
        if m:
            last = line.rstrip().rstrip("|").rsplit("|", 1)[1].strip()
            v = re.match(r"\*\*([a-z ]+)\*\*", last)
            assert v and v.group(1) in VERDICTS, f"{m.group(1)}: the verdict cell must open with one of {VERDICTS}"
            out[m.group(1)] = v.group(1)
    return out


def counts_line(found: dict[str, str]) -> str:
    c = Counter(found.values())
    return (f"{c['reproduced']} reproduced, {c['in part']} in part, {c['not reproduced']} not reproduced, "
            f"{c['no published finding']} with no published finding")


def test_every_family_has_one_verdict_of_the_scale():
    found = verdicts((ROOT / "docs" / "validation.md").read_text(encoding="utf-8"))
    assert set(found) == FAMILIES


def test_status_line_and_readme_count_follow_the_table():
    page = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    expected = counts_line(verdicts(page))
    status = next(line for line in page.splitlines() if line.startswith("**Status:"))
    assert expected in status
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert expected in readme, f"README must state the Validation page's count: {expected!r}"


def test_the_parser_reads_a_row_and_rejects_an_off_scale_verdict():
    row = "| [evidence](families/evidence.md#x) | finding | ours | `cmd` | 1 s | **in part**: the contradiction half |"
    assert verdicts(row) == {"evidence": "in part"}
    assert counts_line({"a": "in part", "b": "reproduced"}) == (
        "1 reproduced, 1 in part, 0 not reproduced, 0 with no published finding")
    try:
        verdicts(row.replace("**in part**", "**yes**"))
    except AssertionError as err:
        assert "must open with one of" in str(err)
    else:
        raise AssertionError("an off-scale verdict was accepted")
