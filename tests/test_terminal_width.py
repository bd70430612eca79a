"""Every family's console tables at 80 columns: no cell is cut (rich's ``…``), the families come in the
report's order."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from reasonscope.registry import SUMMARY_ORDER, get_family


@pytest.mark.slow
def test_every_family_table_fits_80_columns_without_cut_cells(five_family_run):
    summary = json.loads((five_family_run / "summary.json").read_text())
    printed = []
    for name in SUMMARY_ORDER:
        if not summary.get(name):
            continue
        out, err = Console(width=80, record=True), Console(width=80, record=True)
        get_family(name).print_summary(summary[name], out, err)
        text = out.export_text()
        assert "…" not in text, f"{name}: a cell is cut at 80 columns:\n{text}"
        assert max(len(line) for line in text.splitlines()) <= 80
        printed.append(name)
    assert printed == ["behavior", "evidence", "attributes", "information", "attack"]
