"""The comparison as one self-contained HTML page (``reasonscope compare ... --html FILE``).

The page holds the gate's decision, a forest plot per unit (every metric's difference NEW - BASE with its
95% interval, coloured by verdict, a line at 0; metrics of another unit, nats or seconds, get their own
plot), the table of the text output with the effect sizes, the notes, and a drill-down per metric: the items
whose score changed most, each with its question, both scores and both models' outputs. Plots are inline
base64 PNGs drawn with the report's matplotlib setup (:mod:`reasonscope.report.plots`); every text from a
model or a dataset is escaped by Jinja2's autoescaping.
"""

from __future__ import annotations

import base64
import io
from collections import defaultdict

from jinja2 import Environment, select_autoescape
from markupsafe import Markup

from .model import MetricComparison, RunComparison
from .render import GATE_WORDS, interval, metric_name, number, p_text, verdict_text

COLOURS = {"worse": "#c0392b", "better": "#1e8449", "changed": "#b9770e", "no change": "#555555",
           "not compared": "#aaaaaa"}
OUTPUT_CHARS = 4000
"""Characters of a model output shown in the drill-down (the rest is cut, and the cut said)."""

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>reasonscope compare: {{ gate }}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 1em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 14px; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.l, th.l { text-align: left; }
.gate { padding: 0.6em 1em; border-radius: 4px; font-weight: bold; }
.g0 { background: #e8f6ec; } .g1 { background: #fbe9e7; } .g2 { background: #fff4e0; }
.worse { color: #c0392b; font-weight: bold; } .better { color: #1e8449; font-weight: bold; }
.dim { color: #888; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f6; padding: 4px; margin: 0;
      max-height: 20em; overflow: auto; font-size: 12px; }
img { max-width: 100%; height: auto; }
details { margin: 0.4em 0; } summary { cursor: pointer; }
</style></head><body>
<h1>reasonscope compare</h1>
<p>BASE <code>{{ r.base.path }}</code> (run {{ r.base.run_id }}, {{ r.base.status }}) &rarr;
NEW <code>{{ r.new.path }}</code> (run {{ r.new.run_id }}, {{ r.new.status }})</p>
<p class="gate g{{ r.exit_code }}">Gate: {{ gate }} (exit {{ r.exit_code }}): {{ r.reason }}</p>
<h2>Differences NEW &minus; BASE with {{ (r.confidence * 100) | round | int }}% intervals</h2>
{% for unit, img in plots %}<p><img alt="differences ({{ unit }})" src="data:image/png;base64,{{ img }}"></p>{% endfor %}
<table><thead><tr><th>Metric</th><th class="l">Family</th><th class="l">Models</th><th>n</th><th>Base</th><th>New</th><th>Diff</th>
<th>95% CI</th><th>p</th><th>p (Holm)</th><th>Effect d</th><th class="l">Verdict</th></tr></thead><tbody>
{% for row in r.metrics %}<tr><td title="{{ row.test }}; interval: {{ row.interval }}">{{ row.label }}</td>
<td class="l">{{ row.family }}</td><td class="l">{{ models(row) }}</td>
<td>{{ row.n_shared if row.paired else "unpaired" }}</td><td>{{ number(row.base_mean) }}</td>
<td>{{ number(row.new_mean) }}</td><td>{{ number(row.difference, True) }}</td><td>{{ interval(row) }}</td>
<td>{{ p_text(row.p_value) }}</td><td>{{ p_text(row.p_holm) }}</td>
<td>{{ "-" if row.effect_size is none else "%+.2f" % row.effect_size }}</td>
<td class="l {{ row.verdict if row.gates else 'dim' }}">{{ verdict_text(row) }}</td></tr>
{% endfor %}</tbody></table>
<ul>{% for line in notes %}<li>{{ line }}</li>{% endfor %}</ul>
{% if drill %}<h2>Items that changed most</h2>
{% for key, changes in drill %}<details><summary>{{ key }} ({{ changes | length }} items)</summary>
<table><thead><tr><th>Item</th><th>Base</th><th>New</th><th>Change</th><th class="l">Question</th>
<th class="l">Base output</th><th class="l">New output</th></tr></thead><tbody>
{% for c in changes %}<tr><td>{{ c.item }}</td><td>{{ number(c.base_value) }}</td><td>{{ number(c.new_value) }}</td>
<td>{{ number(c.change, True) }}</td><td class="l"><pre>{{ c.question or "" }}{% if c.target is not none %}
(target: {{ c.target }}){% endif %}</pre></td><td class="l"><pre>{{ clip(c.base_output) }}</pre></td>
<td class="l"><pre>{{ clip(c.new_output) }}</pre></td></tr>
{% endfor %}</tbody></table></details>
{% endfor %}{% endif %}
</body></html>
"""


def clip(text: str | None) -> str:
    """A model output cut to :data:`OUTPUT_CHARS` characters (the cut said); ``(no output stored)`` for None."""
    if text is None:
        return "(no output stored)"
    if len(text) <= OUTPUT_CHARS:
        return text
    return text[:OUTPUT_CHARS] + f"\n[... {len(text) - OUTPUT_CHARS:,} more characters]"


def forest_plots(result: RunComparison) -> list[tuple[str, str]]:
    """``(unit, base64 PNG)``: one forest plot per unit of the compared metrics (module docstring)."""
    from ..report.plots import HALF, pyplot
    from .metrics import family_specs

    groups: dict[str, list[MetricComparison]] = defaultdict(list)
    for row in result.metrics:
        if row.difference is None:
            continue
        spec = family_specs(row.family).get(row.spec) if row.spec else None
        groups[spec.unit if spec is not None and spec.unit else "shares and scores"].append(row)
    out = []
    plt = pyplot()
    for unit, rows in groups.items():
        fig, ax = plt.subplots(figsize=(HALF[0] * 1.6, 1.2 + 0.3 * len(rows)))
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ys = list(range(len(rows)))[::-1]
        for y, row in zip(ys, rows, strict=True):
            colour = COLOURS[row.verdict]
            if row.ci_low is not None and row.ci_high is not None:
                ax.errorbar(row.difference, y, xerr=[[row.difference - row.ci_low], [row.ci_high - row.difference]],
                            fmt="o", color=colour, capsize=3)
            else:
                ax.plot(row.difference, y, "o", color=colour)
        ax.axvline(0, color="#333", linewidth=0.8)
        ax.set_yticks(ys)
        ax.set_yticklabels([f"{r.family}/{metric_name(r, result)}" for r in rows])
        ax.set_xlabel(f"NEW - BASE ({unit}), {int(result.confidence * 100)}% interval")
        ax.set_title("red: worse, green: better, grey: no change (after Holm)")
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        plt.close(fig)
        out.append((unit, base64.b64encode(buf.getvalue()).decode("ascii")))
    return out


def render_html(result: RunComparison) -> str:
    """The comparison as a self-contained HTML page (module docstring)."""
    from .render import notes

    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    drill: dict[str, list] = defaultdict(list)
    for change in result.changes:
        models = change.base_model if change.base_model == change.new_model else \
            f"{change.base_model} -> {change.new_model}"
        drill[f"{change.family}/{change.metric} ({models})"].append(change)
    template = env.from_string(TEMPLATE)
    return template.render(
        r=result, gate=GATE_WORDS[result.exit_code], notes=notes(result), drill=list(drill.items()),
        plots=[(unit, Markup(img)) for unit, img in forest_plots(result)], number=number, p_text=p_text,
        interval=interval, verdict_text=verdict_text, clip=clip,
        models=lambda row: row.base_model if row.base_model == row.new_model else f"{row.base_model} -> {row.new_model}")
