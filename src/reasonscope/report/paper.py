"""The report's tables as a paper takes them: markdown (``report.md``) and LaTeX with booktabs (``report.tex``).

``reasonscope report RUN --format markdown|latex`` writes them beside report.html, from the same table
views (:func:`reasonscope.report.html.family_tables`), so every number is the page's text: one rounding
rule per column (:mod:`reasonscope.report.columns`), ``value [low, high]`` with its 95% CI. Per table:

* a header per column with the direction of a metric column (``↑`` higher is better, ``↓`` lower is
  better; ``$\\uparrow$`` / ``$\\downarrow$`` in LaTeX);
* n: when every cell of a column has the same n it is written once in the header (``n=40``), else
  in each cell (``0.82 [0.79, 0.85] (n=40)``), with any failed generations and reasons;
* numbers right-aligned, text left-aligned (markdown ``---:``, LaTeX ``r`` / ``l`` columns); the
  markdown cells are padded so the columns line up in plain text too;
* the table's "how computed" note and its settings under it (a LaTeX ``\\caption`` holds the title).

The LaTeX needs ``\\usepackage{booktabs}`` (``\\toprule``, ``\\midrule``, ``\\bottomrule``); text is escaped
(``& % $ # _ { } ~ ^ \\``), the arrows are math.
"""

from __future__ import annotations

from typing import Literal

from .html_tables import TableView

PaperFormat = Literal["markdown", "latex"]
FORMATS: dict[str, str] = {"markdown": "report.md", "latex": "report.tex"}
"""Format -> the file ``reasonscope report --format`` writes into the run directory."""
_LATEX = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
          "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
          "↑": r"$\uparrow$", "↓": r"$\downarrow$", "·": r"$\cdot$", "≤": r"$\le$", "≥": r"$\ge$"}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped and the arrows as math."""
    return "".join(_LATEX.get(c, c) for c in text)


def cells_and_headers(view: TableView) -> tuple[list[str], list[list[str]], list[bool]]:
    """Headers (direction and a shared n), cell texts (with their own n where it differs) and right-alignment."""
    headers, columns, numeric = [], [], []
    for j, header in enumerate(view.headers):
        subs = [row[j].sub for row in view.rows]
        shared = subs[0] if subs and len(set(subs)) == 1 and subs[0].startswith("n=") and ";" not in subs[0] else ""
        arrow = view.directions[j] if j < len(view.directions) else ""
        headers.append(header + (f" {arrow}" if arrow else "") + (f", {shared}" if shared else ""))
        columns.append([row[j].text + (f" ({row[j].sub})" if row[j].sub and not shared else "") for row in view.rows])
        numeric.append(all(row[j].numeric for row in view.rows))
    rows = [list(r) for r in zip(*columns, strict=True)] if columns else []
    return headers, rows, numeric


def markdown_table(view: TableView) -> str:
    """One table as a markdown section: title, aligned pipe table, note and settings."""
    headers, rows, numeric = cells_and_headers(view)
    pipe = lambda s: s.replace("|", "\\|")  # noqa: E731
    headers = [pipe(h) for h in headers]
    rows = [[pipe(c) for c in r] for r in rows]
    widths = [max([len(h), 3, *(len(r[j]) for r in rows)]) for j, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if num else c.ljust(w)
                                 for c, w, num in zip(cells, widths, numeric, strict=True)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if num else (":" + "-" * (w + 1))
                          for w, num in zip(widths, numeric, strict=True)) + "|"
    out = [f"### {view.title}", "", line(headers), rule, *(line(r) for r in rows), ""]
    if view.settings:
        out += ["Settings and notes: " + "; ".join(f"{k} = {v}" for k, v in view.settings), ""]
    if view.note:
        out += [f"How computed: {view.note}", ""]
    return "\n".join(out)


def latex_table(view: TableView) -> str:
    """One table as a LaTeX ``table`` with booktabs rules, its title as the caption and its note under it."""
    headers, rows, numeric = cells_and_headers(view)
    spec = "".join("r" if num else "l" for num in numeric)
    out = [r"\begin{table}[ht]", r"\centering", r"\small", rf"\caption{{{latex_escape(view.title)}}}",
           rf"\label{{tab:{view.key.replace('_', '-')}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
           " & ".join(latex_escape(h) for h in headers) + r" \\", r"\midrule"]
    out += [" & ".join(latex_escape(c) for c in r) + r" \\" for r in rows]
    out += [r"\bottomrule", r"\end{tabular}"]
    notes = []
    if view.settings:
        notes.append("Settings: " + "; ".join(f"{k} = {v}" for k, v in view.settings) + ".")
    if view.note:
        notes.append(view.note)
    if notes:
        out.append(r"\par\smallskip\footnotesize " + latex_escape(" ".join(notes)))
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"


def paper_text(views: dict[str, list[TableView]], fmt: PaperFormat, title: str = "",
               titles: dict[str, str] | None = None) -> str:
    """Every table of every family in ``fmt``, family by family (markdown sections, or LaTeX tables).

    ``views``: family -> its tables (:func:`reasonscope.report.html.family_tables`); ``titles``: family -> its
    section title (default the family's name).

    Raises:
        ValueError: for another format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")
    parts = []
    if fmt == "markdown":
        parts.append(f"# {title or 'reasonscope tables'}\n\nValues are means with 95% CIs, `value [low, high]`; "
                     "↑ higher is better, ↓ lower is better; one rounding rule per column.\n")
        for family, tables in views.items():
            parts.append(f"## {(titles or {}).get(family, family)}\n")
            parts += [markdown_table(v) for v in tables]
        return "\n".join(parts)
    parts.append(f"% {latex_escape(title or 'reasonscope tables')}: needs \\usepackage{{booktabs}}\n"
                 "% values are means with 95% CIs, value [low, high]; one rounding rule per column\n")
    for family, tables in views.items():
        parts.append(f"% --- {(titles or {}).get(family, family)}\n")
        parts += [latex_table(v) for v in tables]
    return "\n".join(parts)
