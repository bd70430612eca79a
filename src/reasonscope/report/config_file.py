"""``RUN_DIR/config.yaml``, the plan of the run the outputs describe.

A module of its own so that a run found up to date writes it without importing the report's tables and
plots (numpy, matplotlib): 0.1 s of the up-to-date re-run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..storage.atomic_files import write_text
from ..storage.yaml_io import dump_yaml


def write_config(run_dir: Path, config: dict[str, Any]) -> Path:
    """Write ``RUN_DIR/config.yaml``: a run's resolved plan (its stored ``config``) as YAML 1.2.

    ``load_plan`` reads it back as the same values; the report and a run found up to date both write it
    here, so config.yaml always holds the plan of the run the outputs describe.
    """
    return write_text(Path(run_dir) / "config.yaml", config_text(config))


def config_text(config: dict[str, Any]) -> str:
    """The text of ``config.yaml`` for a run's resolved plan (what :func:`write_config` writes)."""
    return dump_yaml(config)
