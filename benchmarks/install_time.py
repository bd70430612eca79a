"""Benchmark: a fresh install of each of the README's two commands, with and without the lock.

Takes the two install commands of the README's "Set up" section as they are written (the lines that
start with ``python3 -m venv .venv``), points each at a scratch virtual environment in a temporary
folder, drops what follows the install (``reasonscope demo``, ``python -m pytest``), and runs it twice:
as written (``-c constraints/...``: every version pinned) and with the ``-c`` options removed (pip
resolves the newest versions itself). Prints, for each install as it finishes, its wall time, the CPU
time of its processes (less sensitive than the wall time to other work on a busy machine), how often
pip backtracked (its "looking at multiple versions" lines) and the machine's load, then the
locked/unlocked ratios.

    python benchmarks/install_time.py                 # all four installs, pip's cache as it is
    python benchmarks/install_time.py --only dev --no-cache

pip's download cache is left as it is (warm after a first install) unless ``--no-cache`` is given.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAIL = re.compile(r" && (reasonscope demo|python -m pytest)\s*$")


def readme_commands() -> dict[str, str]:
    """``{"demo": ..., "dev": ...}``: the README's install commands without their last step."""
    lines = [line.strip() for line in (ROOT / "README.md").read_text().splitlines()
             if line.strip().startswith("python3 -m venv .venv")]
    if len(lines) != 2:
        raise SystemExit(f"README.md: expected 2 install commands, found {len(lines)}")
    return {"demo": TAIL.sub("", lines[0]), "dev": TAIL.sub("", lines[1])}


def run(command: str, venv: Path, locked: bool, no_cache: bool) -> tuple[float, float, int, int, int]:
    """(wall seconds, CPU seconds, exit status, backtracking lines, packages installed) for one install."""
    command = command.replace("python3 -m venv .venv && . .venv/bin/activate",
                              f"python3 -m venv {venv} && . {venv}/bin/activate")
    if not locked:
        command = re.sub(r" -c constraints/\S+", "", command)
    env = dict(os.environ, PIP_NO_CACHE_DIR="1") if no_cache else dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    t, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds, after = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    log = proc.stdout + proc.stderr
    (venv.parent / f"{'locked' if locked else 'unlocked'}.log").write_text(log)
    if proc.returncode:
        print(log[-3000:])
    backtracks = len(re.findall(r"pip is looking at multiple versions", log))
    installed = re.findall(r"^Successfully installed (.*)$", log, flags=re.M)
    return seconds, cpu, proc.returncode, backtracks, sum(len(x.split()) for x in installed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["demo", "dev"], help="one of the two commands")
    ap.add_argument("--no-cache", action="store_true", help="without pip's download cache")
    args = ap.parse_args()
    commands = readme_commands()
    print(f"{os.cpu_count()} cores; pip's download cache {'off' if args.no_cache else 'as it is'}")
    print("| command | lock | wall (s) | CPU (s) | backtracking lines | packages | load (1 min) at start / end |")
    print("|---|---|---|---|---|---|---|", flush=True)
    rows = {}
    for name, command in commands.items():
        if args.only and name != args.only:
            continue
        for locked in (True, False):
            load = os.getloadavg()[0]
            with tempfile.TemporaryDirectory(prefix=f"install-{name}-") as tmp:
                wall, cpu, status, backtracks, packages = run(command, Path(tmp) / "venv", locked, args.no_cache)
            if status:
                raise SystemExit(f"{name} ({'locked' if locked else 'unlocked'}) failed: exit {status}")
            rows[name, locked] = wall, cpu
            print(f"| {name} | {'yes' if locked else 'no'} | {wall:.0f} | {cpu:.0f} | {backtracks} | {packages} | "
                  f"{load:.1f} / {os.getloadavg()[0]:.1f} |", flush=True)
    for name in commands:
        if (name, True) in rows and (name, False) in rows:
            (a, ca), (b, cb) = rows[name, True], rows[name, False]
            print(f"{name}: locked / unlocked wall {a / b:.2f}, CPU {ca / cb:.2f}")

if __name__ == "__main__":
    main()
