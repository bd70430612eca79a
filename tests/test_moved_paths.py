"""The module paths from before the move into packages keep working for one release, with a warning."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from reasonscope._moved import MOVED


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_old_path_is_the_same_module_and_warns(old, new):
    sys.modules.pop(f"reasonscope.{old}", None)
    with pytest.warns(DeprecationWarning, match=rf"reasonscope\.{old} moved to reasonscope\.{new};"):
        moved = importlib.import_module(f"reasonscope.{old}")
    real = importlib.import_module(f"reasonscope.{new}")
    assert moved is real
    assert real.__name__ == f"reasonscope.{new}"
    assert real.__spec__.name == f"reasonscope.{new}"  # the alias import leaves the real module's spec alone


def test_monkeypatch_through_the_old_path_patches_the_module_in_use(monkeypatch):
    from reasonscope.storage import store

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        monkeypatch.setattr("reasonscope.store.STORE_FILENAME", "patched.sqlite")
    assert store.STORE_FILENAME == "patched.sqlite"


def test_from_import_of_an_old_name_and_unknown_names_still_fail():
    with pytest.warns(DeprecationWarning, match="reasonscope.config moved to reasonscope.plan"):
        sys.modules.pop("reasonscope.config", None)
        from reasonscope.config import Plan
    from reasonscope.plan import Plan as RealPlan

    assert Plan is RealPlan
    with pytest.raises(ModuleNotFoundError, match="reasonscope.no_such_module"):
        importlib.import_module("reasonscope.no_such_module")


def test_no_old_module_file_is_left_behind():
    from pathlib import Path

    src = Path(importlib.import_module("reasonscope").__file__).parent
    left = [old for old in MOVED if src.joinpath(*old.split(".")).with_suffix(".py").exists()]
    assert left == []


def test_the_old_path_finder_adds_nothing_heavy_to_cli_start():
    import subprocess

    code = ("import sys, reasonscope.cli\n"
            "print(sorted(m for m in ('importlib.resources', 'importlib.abc', 'torch', 'transformers', 'scipy',"
            " 'matplotlib', 'pandas', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
