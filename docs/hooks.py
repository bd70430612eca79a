"""MkDocs hooks: the metric catalogue page, and Sphinx roles in docstrings rendered as links.

``metrics.md`` is generated at build time from the registered families' catalogues (each family's
``metrics``, gathered by :class:`reasonscope.metric_specs.Catalogue` from ``registry.all_families()``:
:func:`metrics_page`), so the page lists exactly the metrics the code declares, a plugin family's too: no
copy to keep current. A family with a page ``families/<name>.md`` is linked to it.

Docstrings written for Sphinx say ``:func:`name```; mkdocstrings renders that as the literal role
followed by code. :func:`on_page_content` turns each role into an optional autorefs link (a link when
the name is a documented object, plain code otherwise).
"""

import html
import re
from pathlib import Path

_ROLE = re.compile(r":(?:py:)?(?:mod|func|class|meth|attr|data|obj|exc|const):<code>~?([^<]+)</code>")

METRICS_PAGE = "metrics.md"
DOCS = Path(__file__).resolve().parent


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


def metrics_page(docs_dir: Path = DOCS) -> str:
    """The Markdown of the metric catalogue page: one table per registered family, one row per metric."""
    from reasonscope.metric_specs import Catalogue
    from reasonscope.registry import all_families

    catalogue = Catalogue.of(all_families())

    lines = ["# Metric catalogue", "",
             "Every number reasonscope reports, as declared once by its family (`<family>/catalogue.py`; the "
             "printers, the HTML report and the tables read the same declarations). *Key* is the name in "
             "`summary.json` "
             "and the tables; *range* the possible values (unbounded: no fixed limits); *direction* which way "
             "is better. This page is generated from the code when the site is built.", ""]
    for family in catalogue.families:
        specs = catalogue.of_family(family)
        page = f"families/{family}.md"
        lines += [f"## {family}", ""]
        if (Path(docs_dir) / page).is_file():
            lines += [f"Family page: [{family}]({page}).", ""]
        lines += ["| Key | Label | Range | Direction | Aggregation | How computed |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| `{s.key}` | {_cell(s.label)} | {_range(s)} | {_direction(s)} | {_cell(s.aggregation)} | "
                  f"{_cell(s.description)} |" for s in specs]
        lines.append("")
    return "\n".join(lines)


def on_files(files, config, **_kwargs):
    """Add the generated metric catalogue page to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, METRICS_PAGE, content=metrics_page(Path(config["docs_dir"]))))
    return files


def _link(match: re.Match) -> str:
    target = html.unescape(match.group(1)).strip()
    shown = target.rsplit(".", 1)[-1] if match.group(0).count("~") else target
    ident = html.escape(target, quote=True)
    return f'<autoref identifier="{ident}" optional><code>{html.escape(shown)}</code></autoref>'


def on_page_content(content: str, **_kwargs) -> str:
    """Render the Sphinx roles left in docstrings as optional autorefs links."""
    return _ROLE.sub(_link, content)
