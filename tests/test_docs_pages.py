"""The docs describe the present and stay in step with the code: benchmarks listed, metric catalogue, changelog."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def load_hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_is_listed():
    text = (DOCS / "development.md").read_text(encoding="utf-8")
    table = text[text.index("| script | page |"):text.index("## Layout")]
    listed = set(re.findall(r"`([\w]+\.py)`", table))
    scripts = {p.name for p in (REPO / "benchmarks").glob("*.py")}
    assert scripts - listed == set(), f"docs/development.md's benchmarks table omits {sorted(scripts - listed)}"
    assert listed - scripts == set(), f"docs/development.md lists missing scripts {sorted(listed - scripts)}"


def test_metric_catalogue_page_lists_every_metric_with_range_and_direction():
    from reasonscope.metric_specs import Catalogue
    from reasonscope.registry import all_families

    CATALOGUE = Catalogue.of(all_families())
    page = load_hooks().metrics_page()
    rows = {}
    family = None
    for line in page.splitlines():
        if line.startswith("## "):
            family = line[3:]
        elif line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[(family, cells[0].strip("`"))] = cells
    assert set(rows) == {(s.family, s.key) for s in CATALOGUE}
    assert rows[("behavior", "CQ")][1:4] == ["Correctness (CQ)", "[0, 1]", "higher is better"]
    assert rows[("attack", "success")][2:4] == ["[0, 1]", "lower is better"]
    assert rows[("information", "REV")][2:4] == ["unbounded (nats)", "higher is better"]
    assert rows[("evidence", "asymmetry_difference")][2:4] == ["[-2, 2]", "neither"]


def test_metric_catalogue_page_is_in_the_nav():
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert f": {load_hooks().METRICS_PAGE}" in nav


def test_changelog_keeps_an_unreleased_section():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog") and "\n## [Unreleased]\n" in text
    assert text.index("## [Unreleased]") < text.index("## Development history before 0.1.0")


HISTORY = re.compile(r"previous version|an earlier version|this version's|\| before \||\| now \||before these changes",
                     re.IGNORECASE)


def test_pages_do_not_narrate_history():
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            if HISTORY.search(line):
                found.append(f"{page.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not found, "history belongs in CHANGELOG.md:\n" + "\n".join(found)
