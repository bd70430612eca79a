"""MkDocs hook: render the Sphinx cross-reference roles left in docstrings as mkdocstrings links.

Docstrings written for Sphinx say ``:func:`name```; mkdocstrings renders that as the literal role
followed by code. This hook turns each role into an optional autorefs link (a link when the name
is a documented object, plain code otherwise), so the reference reads cleanly without editing every
docstring.
"""

import html
import re

_ROLE = re.compile(r":(?:py:)?(?:mod|func|class|meth|attr|data|obj|exc|const):<code>~?([^<]+)</code>")


def _link(match: re.Match) -> str:
    target = html.unescape(match.group(1)).strip()
    shown = target.rsplit(".", 1)[-1] if match.group(0).count("~") else target
    ident = html.escape(target, quote=True)
    return f'<autoref identifier="{ident}" optional><code>{html.escape(shown)}</code></autoref>'


def on_page_content(content: str, **_kwargs) -> str:
    return _ROLE.sub(_link, content)
