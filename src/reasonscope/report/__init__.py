"""The outputs of a run, rebuilt from its store: HTML report, spreadsheets, csv tables and plots."""
