"""The families' names and the orders they are walked in, declared once.

``FAMILY_NAMES``: the canonical order (the registry, the metric catalogue, the command line's sub-apps,
the report's sections). ``SCORING_ORDER``: attack and information generate or train on their own, so they
score first, then the families that read the run's generations (console output during a run follows it).
``SUMMARY_ORDER``: the order of the report's summary cards and sections (report.html), and the order in
which the command line prints each family's section of ``summary.json``: the same order in both, so a
researcher finds a family at the same place in the terminal and in the report.

This module sits at the bottom: it imports nothing.
"""

from __future__ import annotations

__all__ = ["FAMILY_NAMES", "SCORING_ORDER", "SUMMARY_ORDER"]

FAMILY_NAMES: tuple[str, ...] = ("behavior", "evidence", "information", "attributes", "attack")
SCORING_ORDER: tuple[str, ...] = ("attack", "information", "behavior", "evidence", "attributes")
SUMMARY_ORDER: tuple[str, ...] = ("behavior", "evidence", "attributes", "information", "attack")
