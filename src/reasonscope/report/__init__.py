"""The outputs of a run, rebuilt from its store: HTML report, spreadsheets, csv tables and plots.

The builder loops over the families it is given; each family's part is its
:class:`~reasonscope.report.view.FamilyReport` (``Family.report``).
"""
