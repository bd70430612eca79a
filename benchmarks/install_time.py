"""Benchmark: a fresh install of each of the README's two commands, its route against pip alone.

Takes the two install commands of the README's "Set up" section as they are written (the lines that
start with ``python3 -m venv .venv``), points each at a scratch virtual environment in a temporary
folder, drops what follows the install (``reasonscope demo``, ``python -m pytest``) and runs it by
each route asked for, one install at a time:

- ``readme``: as written. pip puts torch (the CPU wheel) and uv in, then ``uv pip install
  --compile-bytecode`` installs the rest, every version pinned by ``-c constraints/...``.
- ``pip``: pip alone: every ``uv pip install`` made a ``pip install``, uv and ``--compile-bytecode``
  left out (pip byte-compiles every file it installs, torch's included).
- ``pip-no-compile``: pip alone, ``--no-compile`` on each of its installs.

``--unlocked`` adds each route once more with every ``-c constraints/...`` replaced by a file that pins
torch alone to the README's version (the newest versions of everything else, as ``.ci/newest``
installs them), so that no step can replace the CPU torch.

Prints, for each install as it finishes, its wall time, the CPU time of its processes (less
sensitive than the wall time to other work on a busy machine), pip's backtracking messages ("looking
at multiple versions"), the packages installed, how many installed versions differ from the
constraints file (0: exactly the lock), and the machine's 1-minute load at start and end; then each
route's wall and CPU time as a ratio of the ``readme`` route's.

    python benchmarks/install_time.py                     # readme and pip, both commands, caches as they are
    python benchmarks/install_time.py --only dev --routes readme --cold

Without ``--cold`` pip's and uv's caches are used as they are (warm after a first install); with it
both point at an empty temporary folder (``PIP_CACHE_DIR``, ``UV_CACHE_DIR``), as on a new machine.
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
ROUTES = ("readme", "pip", "pip-no-compile")
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s;]+)")


def readme_commands() -> dict[str, str]:
    """``{"demo": ..., "dev": ...}``: the README's install commands without their last step."""
    lines = [line.strip() for line in (ROOT / "README.md").read_text().splitlines()
             if line.strip().startswith("python3 -m venv .venv")]
    if len(lines) != 2:
        raise SystemExit(f"README.md: expected 2 install commands, found {len(lines)}")
    return {"demo": TAIL.sub("", lines[0]), "dev": TAIL.sub("", lines[1])}


def route(command: str, name: str, torch_pin: str | None = None) -> str:
    """The README ``command`` rewritten for route ``name`` (see the module docstring).

    ``torch_pin``: None for the lock as written, else the path that replaces every constraints file.
    """
    if name != "readme":
        command = command.replace("uv pip install", "pip install").replace(" --compile-bytecode", "")
        command = re.sub(r"(pip install [^&]*?) uv(?=\s|$)", r"\1", command)
        if re.search(r"\buv\b", command):
            raise SystemExit(f"could not take uv out of the README's command: {command}")
    if name == "pip-no-compile":
        command = command.replace("pip install", "pip install --no-compile")
    if torch_pin is not None:
        command = re.sub(r" -c constraints/\S+", f" -c {torch_pin}", command)
    return command


def pins(lines: list[str]) -> dict[str, str]:
    """``{normalised name: version without local label}`` of the ``name==version`` lines."""
    out = {}
    for line in lines:
        if m := PIN.match(line.strip()):
            out[re.sub(r"[-_.]+", "-", m[1]).lower()] = m[2].split("+")[0]
    return out


def off_lock(venv: Path, constraints: Path) -> int:
    """Packages installed but not in the lock, in it but not installed, or at another version than it pins."""
    freeze = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all", "--exclude-editable"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    installed, lock = pins(freeze), pins(constraints.read_text().splitlines())
    installed.pop("pip", None)  # the venv's own pip, not a dependency
    return sum(1 for name in installed.keys() | lock.keys() if installed.get(name) != lock.get(name))


def run(command: str, venv: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, exit status, log) of one install into ``venv``."""
    command = command.replace("python3 -m venv .venv && . .venv/bin/activate",
                              f"python3 -m venv {venv} && . {venv}/bin/activate")
    t, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds, after = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu, proc.returncode, proc.stdout + proc.stderr


def installed_count(log: str) -> int:
    """Packages installed, from pip's "Successfully installed" and uv's " + name==version" lines."""
    by_pip = re.findall(r"^Successfully installed (.*)$", log, flags=re.M)
    return sum(len(x.split()) for x in by_pip) + len(re.findall(r"^ \+ ", log, flags=re.M))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["demo", "dev"], help="one of the two commands")
    ap.add_argument("--routes", default="readme,pip", help=f"comma-separated, of {', '.join(ROUTES)}")
    ap.add_argument("--unlocked", action="store_true", help="also each route with only torch pinned (the newest versions)")
    ap.add_argument("--cold", action="store_true", help="pip's and uv's caches in an empty folder")
    args = ap.parse_args()
    routes = args.routes.split(",")
    if bad := set(routes) - set(ROUTES):
        raise SystemExit(f"--routes: unknown {sorted(bad)}; expected some of {', '.join(ROUTES)}")
    print(f"{os.cpu_count()} cores; pip's and uv's caches {'empty (cold)' if args.cold else 'as they are'}")
    print("| command | route | lock | wall (s) | CPU (s) | backtracking messages | packages | off the lock "
          "| load (1 min) at start / end |")
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    rows = {}
    for name, command in readme_commands().items():
        if args.only and name != args.only:
            continue
        constraints = ROOT / re.search(r"-c (constraints/\S+)", command)[1]
        for locked in (True, False) if args.unlocked else (True,):
            for r in routes:
                load = os.getloadavg()[0]
                with tempfile.TemporaryDirectory(prefix=f"install-{name}-{r}-") as tmp:
                    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
                    if args.cold:
                        env |= {"PIP_CACHE_DIR": f"{tmp}/pip-cache", "UV_CACHE_DIR": f"{tmp}/uv-cache"}
                    venv, pin = Path(tmp) / "venv", None
                    if not locked:
                        pin = Path(tmp) / "torch-pin.txt"
                        pin.write_text(re.search(r"torch==[0-9.]+", command)[0] + "\n")
                    wall, cpu, status, log = run(route(command, r, pin and str(pin)), venv, env)
                    if status:
                        print(log[-3000:])
                        raise SystemExit(f"{name} by {r} ({'locked' if locked else 'unlocked'}) failed: exit {status}")
                    off = off_lock(venv, constraints)
                rows[name, r, locked] = wall, cpu
                print(f"| {name} | {r} | {'yes' if locked else 'no'} | {wall:.0f} | {cpu:.0f} "
                      f"| {len(re.findall('pip is looking at multiple versions', log))} | {installed_count(log)} "
                      f"| {off} | {load:.1f} / {os.getloadavg()[0]:.1f} |", flush=True)
    for (name, r, locked), (wall, cpu) in rows.items():
        if r != "readme" and (base := rows.get((name, "readme", locked))):
            print(f"{name} ({'locked' if locked else 'unlocked'}): {r} / readme wall {wall / base[0]:.2f}, "
                  f"CPU {cpu / base[1]:.2f}")


if __name__ == "__main__":
    main()
