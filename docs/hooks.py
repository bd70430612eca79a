"""MkDocs hooks: the metric catalogue page, and Sphinx roles in docstrings rendered as links.

``metrics.md`` is generated at build time from :data:`reasonscope.metric_specs.CATALOGUE`
(:func:`metrics_page`), so the page lists exactly the metrics the code declares: no copy to keep current.

Docstrings written for Sphinx say ``:func:`name```; mkdocstrings renders that as the literal role
followed by code. :func:`on_page_content` turns each role into an optional autorefs link (a link when
the name is a documented object, plain code otherwise).
"""

import html
import re

_ROLE = re.compile(r":(?:py:)?(?:mod|func|class|meth|attr|data|obj|exc|const):<code>~?([^<]+)</code>")

METRICS_PAGE = "metrics.md"
_FAMILY_PAGES = {"behavior": "families/behavior.md", "evidence": "families/evidence.md",
                 "information": "families/information.md", "attributes": "families/attributes.md",
                 "attack": "families/attack.md"}


def _number(x: float) -> str:
    return f"{x:g}"


def _range(spec) -> str:
    if spec.range is None:
        return "unbounded" + (f" ({spec.unit})" if spec.unit else "")
    low, high = spec.range
    return f"[{_number(low)}, {_number(high)}]" + (f" {spec.unit}" if spec.unit else "")


def _direction(spec) -> str:
    return {True: "higher is better", False: "lower is better", None: "neither"}[spec.higher_is_better]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def metrics_page() -> str:
    """The Markdown of the metric catalogue page: one table per family, one row per metric."""
    from reasonscope.metric_specs import CATALOGUE, FAMILIES

    lines = ["# Metric catalogue", "",
             "Every number reasonscope reports, as declared once in `reasonscope.metric_specs` (the printers, "
             "the HTML report and the tables read the same declarations). *Key* is the name in `summary.json` "
             "and the tables; *range* the possible values (unbounded: no fixed limits); *direction* which way "
             "is better. This page is generated from the code when the site is built.", ""]
    for family in FAMILIES:
        specs = [s for s in CATALOGUE if s.family == family]
        if not specs:
            continue
        lines += [f"## {family}", "", f"Family page: [{family}]({_FAMILY_PAGES[family]}).", "",
                  "| Key | Label | Range | Direction | Aggregation | How computed |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| `{s.key}` | {_cell(s.label)} | {_range(s)} | {_direction(s)} | {_cell(s.aggregation)} | "
                  f"{_cell(s.description)} |" for s in specs]
        lines.append("")
    return "\n".join(lines)


def on_files(files, config, **_kwargs):
    """Add the generated metric catalogue page to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, METRICS_PAGE, content=metrics_page()))
    return files


def _link(match: re.Match) -> str:
    target = html.unescape(match.group(1)).strip()
    shown = target.rsplit(".", 1)[-1] if match.group(0).count("~") else target
    ident = html.escape(target, quote=True)
    return f'<autoref identifier="{ident}" optional><code>{html.escape(shown)}</code></autoref>'


def on_page_content(content: str, **_kwargs) -> str:
    """Render the Sphinx roles left in docstrings as optional autorefs links."""
    return _ROLE.sub(_link, content)
