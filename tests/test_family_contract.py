"""Contract of the family registry: every registered family satisfies the protocol, its sub-app mounts,
its settings schema round-trips, its generation needs reach the runner through the protocol, and the
layering holds (shared layers import no family, no family imports another, the command line or the run
pipeline; the whole import graph is checked in tests/test_layers.py)."""

from __future__ import annotations

import ast
from importlib import import_module
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.family import Family
from reasonscope.metric_specs import MetricSpec
from reasonscope.plan import FamiliesConfig, Plan, ScoreFamiliesConfig
from reasonscope.registry import (
    FAMILIES,
    FAMILY_NAMES,
    SCORING_ORDER,
    all_families,
    check_family,
    enabled_families,
    family_names,
    get_family,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "reasonscope"
FAMILY_PACKAGES = set(FAMILY_NAMES)  # the built-in families' folders under src/
SHARED = {"types", "storage", "execution", "models", "data", "text", "scorers", "judge", "stats", "report",
          "shared_settings", "family", "metric_specs", "prompts", "output_files"}
NAMES = list(family_names())  # every registered family: the built-in five, then any plugin the registry loaded
ASSEMBLY = {"registry", "plan", "cli", "pipeline"}
KNOWN_ASSEMBLY_IMPORTS: dict[str, set[str]] = {}


def test_registry_names_and_order():
    assert NAMES[:5] == ["behavior", "evidence", "information", "attributes", "attack"] == list(FAMILIES)
    assert sorted(SCORING_ORDER) == sorted(FAMILY_NAMES)
    assert sorted(family_names("scoring")) == sorted(family_names("summary")) == sorted(NAMES)
    assert [f.name for f in all_families()] == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_family_passes_the_registry_check_a_plugin_must_pass(name):
    assert check_family(get_family(name), name) is None


@pytest.mark.parametrize("name", NAMES)
def test_family_satisfies_the_protocol(name):
    fam = get_family(name)
    assert isinstance(fam, Family)
    assert fam.name == name
    assert get_family(name) is fam  # loaded once
    assert fam.metrics and all(isinstance(m, MetricSpec) and m.family == name for m in fam.metrics)
    keys = [m.key for m in fam.metrics]
    assert len(keys) == len(set(keys))
    for m in fam.metrics:
        assert m.range is None or m.range[0] < m.range[1]


@pytest.mark.parametrize("name", NAMES)
def test_family_settings_is_the_plan_field(name):
    fam = get_family(name)
    field = FamiliesConfig.model_fields[name]
    assert fam.settings in getattr(field.annotation, "__args__", ())
    assert list(FamiliesConfig.model_fields) == NAMES
    if fam.score_settings is None:  # a family that cannot score imported outputs is not in a score plan
        assert name not in ScoreFamiliesConfig.model_fields
    else:
        assert fam.score_settings in getattr(ScoreFamiliesConfig.model_fields[name].annotation, "__args__", ())


@pytest.mark.parametrize("name", NAMES)
def test_family_settings_schema_round_trips(name):
    fam = get_family(name)
    required = {"evidence": {"train": {"name": "tr", "format": "topics"}, "test": {"name": "te", "format": "topics"}},
                "information": {"train": {"name": "tr", "format": "synthetic"}}}.get(name, {})
    settings = fam.settings.model_validate(required)
    dumped = settings.model_dump(mode="json")
    assert fam.settings.model_validate(dumped) == settings
    schema = fam.settings.model_json_schema()
    assert set(schema["properties"]) == set(dumped)
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        fam.settings.model_validate({**required, "no_such_key": 1})


def test_plan_schema_lists_every_family():
    families = Plan.model_json_schema()["$defs"]["FamiliesConfig"]["properties"]
    assert list(families) == NAMES
    score = ScoreFamiliesConfig.model_json_schema()["properties"]
    built_in = [name for name in score if name in FAMILIES]
    assert built_in == ["behavior", "evidence", "attributes"]  # the built-ins that score imported outputs


@pytest.mark.parametrize("name", NAMES)
def test_family_sub_app_mounts(name):
    from importlib.util import find_spec

    if name == "behavior":  # reached through `run` and `score` only: no commands of its own
        assert find_spec("reasonscope.cli.behavior") is None
        return
    if name in FAMILIES:
        sub = import_module(f"reasonscope.cli.{name}").app  # the command line owns the built-in families' sub-apps
    else:
        sub = get_family(name).commands  # a plugin brings its own
        if sub is None:
            return
    assert isinstance(sub, typer.Typer)
    runner = CliRunner()
    if sub.info.name:  # a command group
        assert sub.info.name in (name, name.replace("_", "-"))  # named after the family
        res = runner.invoke(app, [sub.info.name, "--help"])
        assert res.exit_code == 0, res.output
        for cmd in sub.registered_commands:
            assert (cmd.name or cmd.callback.__name__.replace("_", "-")) in res.output
    else:  # top-level commands
        for cmd in sub.registered_commands:
            res = runner.invoke(app, [cmd.name or cmd.callback.__name__, "--help"])
            assert res.exit_code == 0, res.output


def test_unknown_family_suggests_close_names():
    with pytest.raises(LookupError, match="unknown family 'atribute'; did you mean attributes"):
        get_family("atribute")


def test_enabled_families_follow_the_scoring_order():
    plan = Plan.model_validate({"models": [{"spec": "smollm2"}], "datasets": [{"name": "s", "format": "synthetic"}],
                                "families": {"behavior": {}, "attack": {}}})
    assert [f.name for f, _ in enabled_families(plan.families)] == ["attack", "behavior"]


def _imports(path: Path) -> set[str]:
    """Top-level reasonscope subpackages/modules a source file imports (relative imports resolved)."""
    rel = path.relative_to(SRC)
    package = list(rel.parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                parts = base + (node.module.split(".") if node.module else [])
                if not parts:  # `from .. import x` at the package root
                    parts = [a.name for a in node.names]
            elif (node.module or "").startswith("reasonscope."):
                parts = node.module.split(".")[1:]
            else:
                continue
            if parts:
                out.add(parts[0])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("reasonscope.")}
    return out


def _sources(top: str) -> list[Path]:
    path = SRC / top
    return sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]


def test_import_graph_walker_sees_relative_and_absolute_imports(tmp_path):
    assert "plan" in _imports(SRC / "pipeline" / "runner.py")  # `from ..plan import`
    assert "storage" in _imports(SRC / "report" / "build.py")


@pytest.mark.parametrize("layer", sorted(SHARED))
def test_shared_layers_import_no_family(layer):
    for path in _sources(layer):
        bad = _imports(path) & (FAMILY_PACKAGES | ASSEMBLY - KNOWN_ASSEMBLY_IMPORTS.get(layer, set()))
        assert not bad, f"{path.relative_to(SRC)} (shared layer) imports {sorted(bad)}"


@pytest.mark.parametrize("name", FAMILY_NAMES)  # the built-in families' sources
def test_no_family_imports_another(name):
    for path in _sources(name):
        bad = _imports(path) & (FAMILY_PACKAGES - {name})
        assert not bad, f"{path.relative_to(SRC)} imports the families {sorted(bad)}"


@pytest.mark.parametrize("name", FAMILY_NAMES)  # the built-in families' sources
def test_no_family_imports_the_command_line_or_the_run_pipeline(name):
    above = {"cli", "pipeline", "plan", "registry"}
    for path in _sources(name):
        bad = _imports(path) & above
        assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}, which sit above the families"


def test_generation_needs_come_through_the_protocol():
    from reasonscope.pipeline.runner import answer_needs, request_count
    from reasonscope.types import Item

    def plan(families):
        return Plan.model_validate({"models": [{"spec": "smollm2"}], "datasets": [{"name": "s", "format": "synthetic"}],
                                    "families": families})

    both = plan({"behavior": {"samples": 4, "paraphrases": 2}, "attributes": {}})
    assert answer_needs(both) == (4, 2)  # the larger of behavior's (4, 2) and attributes' (1, 0)
    assert answer_needs(plan({"attributes": {}})) == (1, 0)
    assert answer_needs(plan({"attack": {}})) is None
    item = Item(id="a", input="q", target="1", perturbations=["q1", "q2", "q3"])
    assert request_count({"s": [item]}, both) == 4 + 2  # K samples of the question, one per first P paraphrases
    assert request_count({"s": [item]}, plan({"attack": {}})) == 0
    reuse = {f.name: f.may_reuse_finished_run(s) for f, s in enabled_families(plan(
        {"behavior": {}, "attributes": {}, "attack": {}, "information": {"train": {"name": "t", "format": "synthetic"}},
         "evidence": {"train": {"name": "tr", "format": "topics"}, "test": {"name": "te", "format": "topics"},
                      "predictions": "p.jsonl"}}).families)}
    assert reuse == {"attack": False, "information": False, "behavior": True, "evidence": False, "attributes": True}


def test_attack_executor_does_not_import_the_family_module():
    tree = ast.parse((SRC / "attack" / "executor.py").read_text(encoding="utf-8"))
    imported = {(n.level, n.module) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert (1, "scoring") not in imported and (0, "reasonscope.attack.scoring") not in imported


@pytest.mark.parametrize("package", ["reasonscope", "reasonscope.data", "reasonscope.text", "reasonscope.models",
                                     "reasonscope.scorers", "reasonscope.judge", "reasonscope.stats",
                                     *(f"reasonscope.{n}" for n in FAMILY_NAMES)])
def test_package_front_exports_resolve(package):
    import importlib

    module = importlib.import_module(package)
    assert module.__all__
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018


def test_version_is_the_installed_distribution():
    from importlib.metadata import version

    import reasonscope

    assert reasonscope.__version__ == version("reasonscope")
    assert reasonscope.get_family("behavior") is get_family("behavior")
