"""The ``reasonscope`` process: the garbage collector is set for a batch run; a library user's is not."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

from reasonscope.cli.process import GC_THRESHOLDS


def _child(code: str) -> str:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_command_line_process_freezes_its_imports_and_collects_less_often():
    out = _child("""
        import gc, sys
        before = gc.get_threshold()
        from reasonscope.cli import main
        sys.argv = ["reasonscope", "--help"]
        try:
            main()
        except SystemExit:
            pass
        print(before, gc.get_threshold(), gc.get_freeze_count() > 10_000)
    """).splitlines()[-1]
    assert out == f"{gc.get_threshold()} {GC_THRESHOLDS} True"


def test_importing_or_calling_the_app_leaves_the_collector_alone():
    out = _child("""
        import gc
        from typer.testing import CliRunner
        from reasonscope.cli import app
        result = CliRunner().invoke(app, ["--help"])
        print(result.exit_code, gc.get_threshold(), gc.get_freeze_count())
    """)
    assert out == f"0 {gc.get_threshold()} 0"
