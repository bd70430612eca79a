"""Every command, plan and code snippet in the README and the documentation pages works.

The pages are read as Markdown; each fenced block is a snippet of its language:

* ``yaml``: a plan, loaded by the real plan loader (``load_plan``: the YAML 1.2 reader with file:line
  errors, then the pydantic models). A block without ``experiment`` is a fragment (a ``models:`` list,
  a ``families:`` section) and is checked inside a minimal plan; a block with ``input`` is a score plan.
* ``bash``: one command per line (``\\`` continues a line, ``#`` starts a comment). Every command must be
  ``reasonscope ...``: it is parsed against the command line (an unknown command or option, a missing
  required option, or a missing ``examples/`` file fails), and the cheap ones (``--help``, ``validate``,
  ``schema``, ``providers``) are executed. Under ``-m slow`` every command of a page is executed, in the
  page's order, in a folder holding a copy of ``examples/``.
* ``json``: every line parses; ``python``: compiles (and runs under ``-m slow``).

A snippet that cannot run offline is marked right above its fence with
``<!-- snippet: skip (the reason) -->``: it is reported as skipped, with its reason. A snippet that loads
real models is marked ``<!-- snippet: slow -->``; it is only parsed in the default run. Commands other
than ``reasonscope`` (installs, benchmarks, servers) must carry a skip marker.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.plan import Plan, ScorePlan, load_plan

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$")
MARKER = re.compile(r"<!--\s*snippet:\s*(\w+)\s*(?:\((.*)\))?\s*-->")
CHEAP = {"validate", "schema", "providers"}
BASE_PLAN = {"experiment": {"name": "docs-snippet", "output_dir": "runs"},
             "models": [{"spec": "mock/reasoner"}],
             "datasets": [{"name": "synthetic", "format": "synthetic", "size": 2}]}


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int          # 1-based line of the opening fence
    lang: str
    text: str
    marker: str | None  # "skip" | "slow" | None
    reason: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def read_snippets(page: Path) -> list[Snippet]:
    """The fenced blocks of a Markdown page, each with the marker comment right above it (if any)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    snippets, previous, i = [], "", 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        indent, fence, lang = opening.groups()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        marker = MARKER.fullmatch(previous)
        snippets.append(Snippet(page, i + 1, lang.lower(), "\n".join(body) + "\n",
                                marker.group(1) if marker else None, marker.group(2) if marker else None))
        previous, i = "", j + 1
    return snippets


SNIPPETS = [s for page in PAGES for s in read_snippets(page)]


def _of(lang: str) -> list:
    return [pytest.param(s, id=s.where) for s in SNIPPETS if s.lang == lang]


def commands(snippet: Snippet) -> list[tuple[list[str], str | None]]:
    """(argv, file the output is redirected to) for each command line of a shell snippet."""
    out = []
    for line in snippet.text.replace("\\\n", " ").splitlines():
        argv = shlex.split(line, comments=True)
        redirect = None
        if ">" in argv:
            at = argv.index(">")
            argv, redirect = argv[:at], argv[at + 1]
        if argv:
            out.append((argv, redirect))
    return out


def parse_command(args: list[str]) -> str | None:
    """Parse a reasonscope command line with the real CLI without running it: the error message, or None.

    Typer builds click-style commands (recent typer ships its own copy of click), so groups and usage
    errors are recognised by their interface (``get_command``, ``format_message``), not by a click class.
    """
    command = typer.main.get_command(app)
    try:
        ctx = command.make_context("reasonscope", list(args))
        while hasattr(command, "get_command"):
            rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
            if not rest:
                break
            sub = command.get_command(ctx, rest[0])
            if sub is None:
                return f"no such command {rest[0]!r}"
            command, ctx = sub, sub.make_context(rest[0], rest[1:], parent=ctx)
    except Exception as err:  # a usage error of typer's click: unknown option, missing value, bad type
        if hasattr(err, "format_message"):
            return err.format_message()
        raise
    return None


def invoke(argv: list[str], redirect: str | None, where: str) -> None:
    result = CliRunner().invoke(app, argv[1:], catch_exceptions=False)
    assert result.exit_code == 0, f"{where}: `{shlex.join(argv)}` exited {result.exit_code}:\n{result.output[-3000:]}"
    if redirect:
        Path(redirect).write_text(result.stdout, encoding="utf-8")


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder with a copy of examples/, as the documented commands expect (they run from the repo root)."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pages_hold_snippets_and_markers_are_well_formed():
    assert len(SNIPPETS) > 40 and {"yaml", "bash", "json", "python"} <= {s.lang for s in SNIPPETS}
    for page in PAGES:
        for line, text in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            found = MARKER.fullmatch(text.strip())
            if not found:
                continue
            assert found.group(1) in ("skip", "slow"), f"{page.name}:{line}: unknown snippet marker {found.group(1)!r}"
            if found.group(1) == "skip":
                assert (found.group(2) or "").strip(), f"{page.name}:{line}: a skip marker needs a reason: (why)"
            attached = [s for s in SNIPPETS if s.page == page and s.marker and 0 < s.line - line <= 2]
            assert attached, f"{page.name}:{line}: the marker is not right above a fenced block"


def test_read_snippets_honours_indentation_and_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("1. Step:\n\n    <!-- snippet: skip (needs an API key) -->\n    ```bash\n    reasonscope run a \\\n"
                    "      --retry-failed   # comment\n    ```\n\nText\n\n```yaml\nmodels: []\n```\n", encoding="utf-8")
    first, second = read_snippets(page)
    assert (first.line, first.lang, first.marker, first.reason) == (4, "bash", "skip", "needs an API key")
    assert commands(first) == [(["reasonscope", "run", "a", "--retry-failed"], None)]
    assert (second.line, second.lang, second.marker, second.text) == (11, "yaml", None, "models: []\n")


@pytest.mark.parametrize("snippet", _of("yaml"))
def test_yaml_snippet_is_a_valid_plan(snippet, tmp_path):
    if snippet.marker == "skip":
        pytest.skip(f"{snippet.where}: {snippet.reason}")
    data = yaml.safe_load(snippet.text)
    assert isinstance(data, dict), f"{snippet.where}: not a YAML mapping"
    path = tmp_path / "plan.yaml"
    if "experiment" in data:  # a whole plan: the loader reads the snippet itself (its lines, its YAML)
        path.write_text(snippet.text, encoding="utf-8")
    else:  # a fragment: inside a minimal plan
        data = {**BASE_PLAN, **data}
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    try:
        load_plan(path, model=ScorePlan if "input" in data else Plan)
    except ValueError as err:
        pytest.fail(f"{snippet.where}: the plan loader refuses this snippet: {err}")


@pytest.mark.parametrize("snippet", _of("json"))
def test_json_snippet_parses(snippet):
    for n, line in enumerate(snippet.text.splitlines(), start=snippet.line + 1):
        if line.strip():
            try:
                json.loads(line)
            except json.JSONDecodeError as err:
                pytest.fail(f"{snippet.page.name}:{n}: {err}")


@pytest.mark.parametrize("snippet", _of("python"))
def test_python_snippet_compiles(snippet):
    compile(snippet.text, snippet.where, "exec")


@pytest.mark.parametrize("snippet", _of("bash"))
def test_shell_snippet_parses(snippet, workdir):
    """Each command exists with these options and example files; cheap commands also run."""
    if snippet.marker == "skip":
        pytest.skip(f"{snippet.where}: {snippet.reason}")
    for argv, redirect in commands(snippet):
        assert argv[0] == "reasonscope", (
            f"{snippet.where}: `{shlex.join(argv)}` is not a reasonscope command; mark the block with "
            "<!-- snippet: skip (why it cannot run here) -->")
        for arg in argv[1:]:
            for value in arg.split("="):
                if value.startswith("examples/"):
                    assert (REPO / value).exists(), f"{snippet.where}: {value} does not exist"
        if "--help" in argv or argv[1] in CHEAP:
            invoke(argv, redirect, snippet.where)
            continue
        error = parse_command(argv[1:])
        assert error is None, f"{snippet.where}: `{shlex.join(argv)}`: {error}"


def _runnable_pages() -> list:
    pages = sorted({s.page for s in SNIPPETS if s.lang in ("bash", "python") and s.marker != "skip"})
    return [pytest.param(p, id=str(p.relative_to(REPO))) for p in pages]


@pytest.mark.slow
@pytest.mark.parametrize("page", _runnable_pages())
def test_page_snippets_run(page, workdir):
    """Every shell and Python snippet of the page runs, in the page's order, with exit code 0."""
    for snippet in read_snippets(page):
        if snippet.marker == "skip" or snippet.lang not in ("bash", "python"):
            continue
        if snippet.lang == "python":
            exec(compile(snippet.text, snippet.where, "exec"), {"__name__": "__docs__"})
            continue
        for argv, redirect in commands(snippet):
            invoke(argv, redirect, snippet.where)
