"""Families from installed distributions (entry-point group ``reasonscope.families``).

The registry loads them after the built-in five and checks them like its own (:mod:`reasonscope.registry`);
a broken plugin gives one message naming its distribution and the others load. Each plugin here is a
``*.dist-info`` folder written into a temporary folder (what pip writes when it installs a distribution), so
:mod:`importlib.metadata` finds its entry points without pip or a network. The suite runs with plugin
autoload off (tests/conftest.py); these tests hand the registry their entry points. The example family of
``examples/trace-length-family`` running end to end is tests/test_plugins_e2e.py.
"""

from __future__ import annotations

import json
import textwrap
from importlib.metadata import distributions
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonscope import registry
from reasonscope.family import FamilyBase
from reasonscope.registry import ENTRY_POINT_GROUP, discover, family_names, reload_plugins

EXAMPLE_SRC = Path(__file__).resolve().parents[1] / "examples" / "trace-length-family" / "src"


def write_distribution(site: Path, name: str, version: str, entry_points: dict[str, str]) -> Path:
    """A minimal installed distribution in ``site``: its METADATA and entry_points.txt (what pip writes)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = [f"[{ENTRY_POINT_GROUP}]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return site


def entry_points_in(site: Path):
    """The ``reasonscope.families`` entry points of the distributions in ``site`` (and only those)."""
    return [ep for dist in distributions(path=[str(site)]) for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]


FAKES = textwrap.dedent('''
    from reasonscope.family import FamilyBase
    from reasonscope.metric_specs import MetricSpec
    from reasonscope.shared_settings import Strict


    class Settings(Strict):
        level: int = 1


    class Fake(FamilyBase):
        settings = Settings
        def __init__(self, name, rank=0):
            self.name, self.rank = name, rank
            self.metrics = (MetricSpec(key="m", label="M", family=name),)
        def score(self, ctx):
            return None
        def print_summary(self, tables, out, err):
            out.print(tables)


    ALPHA = Fake("alpha")
    BETA = Fake("beta", rank=-1)
    MISNAMED = Fake("gamma")
    NOT_A_FAMILY = object()

    class NoSettings(Fake):
        settings = dict
    NO_SETTINGS = NoSettings("nosettings")

    import typer
    tools = typer.Typer(name="alpha-tools")
    @tools.command()
    def hello():
        print("hello from alpha")
    taken = typer.Typer(name="run")
    @taken.command()
    def anything():
        pass
    WITH_TOOLS = Fake("withtools")
    WITH_TOOLS.commands = tools
    CLASHING = Fake("clashing")
    CLASHING.commands = taken
''')


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    """A module ``fake_families`` on sys.path with good and bad family objects; the registry reset after."""
    (tmp_path / "fake_families.py").write_text(FAKES, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "site"
    reload_plugins()  # back to the suite's state: autoload off, no plugin


def test_a_plugin_loads_with_its_distribution_and_version(fakes, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    site = write_distribution(fakes, "reasonscope-trace-length", "0.1.0", {"trace_length": "trace_length.entry:FAMILY"})
    loaded, sources = discover(entry_points_in(site))
    assert list(loaded) == ["trace_length"]
    assert loaded["trace_length"].name == "trace_length"
    (row,) = sources
    assert (row.name, row.distribution, row.version, row.source, row.status) == (
        "trace_length", "reasonscope-trace-length", "0.1.0", "plugin", "ok")


def test_broken_plugins_give_one_message_each_and_the_others_load(fakes):
    site = write_distribution(fakes, "broken-families", "2.0", {
        "missing": "no_such_module_anywhere:FAMILY", "wrong": "fake_families:NOT_A_FAMILY",
        "behavior": "fake_families:ALPHA", "misnamed": "fake_families:MISNAMED", "Bad-Name": "fake_families:ALPHA",
        "models": "fake_families:ALPHA", "nosettings": "fake_families:NO_SETTINGS"})
    write_distribution(site, "good-families", "1.0", {"alpha": "fake_families:ALPHA"})
    loaded, sources = discover(entry_points_in(site))
    assert list(loaded) == ["alpha"]
    status = {s.name: s.status for s in sources}
    assert status == {
        "alpha": "ok",
        "Bad-Name": "broken: the name 'Bad-Name' is not a lower-case identifier (letters, digits, '_', starting "
                    "with a letter)",
        "behavior": "broken: the name 'behavior' is a built-in family's",
        "misnamed": "broken: its name is 'gamma' but its entry point is named 'misnamed'; they must be the same",
        "missing": "broken: import failed: ModuleNotFoundError: No module named 'no_such_module_anywhere'",
        "models": "broken: the name 'models' is reserved (a top-level key of summary.json or of a plan)",
        "nosettings": "broken: settings must be a pydantic model class, got <class 'dict'>",
        "wrong": "broken: object does not satisfy reasonscope.family.Family: missing " + ", ".join(
            registry._PROTOCOL_MEMBERS) + " (derive it from reasonscope.family.FamilyBase)",
    }
    missing = next(s for s in sources if s.name == "missing")
    assert missing.message == ("family plugin 'missing' from distribution broken-families 2.0 "
                               "(no_such_module_anywhere:FAMILY) was not loaded: import failed: ModuleNotFoundError: "
                               "No module named 'no_such_module_anywhere'; the other families are unaffected")


def test_the_second_plugin_of_a_name_is_refused_naming_the_first(fakes):
    site = write_distribution(fakes, "first-dist", "1.0", {"alpha": "fake_families:ALPHA"})
    write_distribution(site, "second-dist", "1.0", {"alpha": "fake_families:ALPHA"})
    loaded, sources = discover(entry_points_in(site))
    assert list(loaded) == ["alpha"]
    assert sorted(s.status for s in sources) == [
        "broken: the name 'alpha' is already registered by distribution " + sources[0].distribution, "ok"]


def test_plugins_follow_the_built_ins_in_every_order_by_rank_then_name(fakes):
    site = write_distribution(fakes, "good-families", "1.0", {"alpha": "fake_families:ALPHA",
                                                              "beta": "fake_families:BETA"})
    reload_plugins(entry_points_in(site))
    assert family_names() == ("behavior", "evidence", "information", "attributes", "attack", "beta", "alpha")
    assert family_names("scoring") == ("attack", "information", "behavior", "evidence", "attributes", "beta", "alpha")
    assert family_names("summary") == ("behavior", "evidence", "attributes", "information", "attack", "beta", "alpha")
    assert registry.get_family("alpha").name == "alpha"
    with pytest.raises(LookupError, match=r"unknown family 'alpah'; did you mean alpha\?"):
        registry.get_family("alpah")
    with pytest.raises(ValueError, match="unknown family order 'random'"):
        family_names("random")


def test_a_broken_plugin_named_in_lookup_gives_its_message(fakes):
    site = write_distribution(fakes, "broken-families", "2.0", {"missing": "no_such_module_anywhere:FAMILY"})
    reload_plugins(entry_points_in(site))
    with pytest.raises(LookupError, match="family plugin 'missing' from distribution broken-families 2.0"):
        registry.get_family("missing")
    assert registry.plugin_problems() == [s.message for s in registry.family_sources() if s.source == "plugin"]


def test_the_families_command_lists_built_ins_plugins_and_broken_ones(fakes):
    from reasonscope.cli import app

    site = write_distribution(fakes, "good-families", "1.0", {"alpha": "fake_families:ALPHA"})
    write_distribution(site, "broken-families", "2.0", {"missing": "no_such_module_anywhere:FAMILY"})
    reload_plugins(entry_points_in(site))
    res = CliRunner().invoke(app, ["families"])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == ["warning: " + registry.plugin_problems()[0]]  # one line, named
    lines = [line.split() for line in res.stdout.splitlines()]
    assert lines[0] == ["name", "distribution", "version", "source", "status"]
    assert [row[0] for row in lines[1:]] == ["behavior", "evidence", "information", "attributes", "attack",
                                              "alpha", "missing"]
    assert lines[1][1:4] == ["reasonscope", registry.family_sources()[0].version, "built-in"]
    assert lines[6][1:] == ["good-families", "1.0", "plugin", "ok"]
    assert lines[7][1:5] == ["broken-families", "2.0", "plugin", "broken:"]
    assert "No module named 'no_such_module_anywhere'" in res.output
    as_json = json.loads(CliRunner().invoke(app, ["families", "--json"]).stdout)
    assert as_json[5] == {"name": "alpha", "target": "fake_families:ALPHA", "distribution": "good-families",
                          "version": "1.0", "source": "plugin", "status": "ok"}


def test_a_plugin_command_group_mounts_unless_its_name_is_taken(fakes):
    import typer

    from reasonscope.cli.root import command_names, mount_families

    site = write_distribution(fakes, "good-families", "1.0", {"withtools": "fake_families:WITH_TOOLS",
                                                              "clashing": "fake_families:CLASHING"})
    reload_plugins(entry_points_in(site))
    root = typer.Typer()
    problems = mount_families(root, {"run", "report"})
    assert problems == ["family plugin 'clashing': the command name run is already a reasonscope command; its "
                        "commands were not mounted"]
    assert {"alpha-tools", "evidence", "attack", "information", "attributes"} <= command_names(root)
    res = CliRunner().invoke(root, ["alpha-tools", "hello"])
    assert res.exit_code == 0 and res.stdout == "hello from alpha\n"


def test_a_plugin_settings_validate_like_any_family(fakes):
    from reasonscope.plan import PlanError, families_section, parse_plan

    site = write_distribution(fakes, "good-families", "1.0", {"alpha": "fake_families:ALPHA"})
    reload_plugins(entry_points_in(site))
    section = families_section(registry.all_families())
    assert list(section.model_fields) == list(family_names())
    assert section.model_validate({"alpha": {"level": 3}}).alpha.level == 3
    with pytest.raises(PlanError) as err:
        parse_plan({"alpha": {"level": "high"}, "attack": {"no_such": 1}}, "plan.yaml",
                   {("alpha", "level"): 4, ("attack",): 7}, model=section)
    assert str(err.value).splitlines() == [
        "plan.yaml: invalid plan (2 errors)",
        "  plan.yaml:7: attack.no_such: unknown key (not part of the plan schema; check the spelling)",
        "  plan.yaml:4: alpha.level: Input should be a valid integer, unable to parse string as an integer "
        "(got 'high')",
    ]


def test_plan_checks_and_model_needs_come_from_the_families():
    from reasonscope.plan import PlanError, parse_plan

    with pytest.raises(PlanError, match="no family enabled: set one of families.behavior, families.evidence, "
                                        "families.information, families.attributes, families.attack"):
        parse_plan({"families": {}})
    with pytest.raises(PlanError, match="families.behavior needs at least one entry in `datasets`"):
        parse_plan({"models": [{"spec": "mock/reasoner"}], "families": {"behavior": {}}})
    with pytest.raises(PlanError, match=r"models: List should have at least 1 item \(generation needs a model: "
                                        r"families.behavior\)"):
        parse_plan({"datasets": [{"name": "s", "format": "synthetic"}], "families": {"behavior": {}}})
    plan = parse_plan({"families": {"evidence": {"train": {"name": "tr", "format": "topics"},
                                                 "test": {"name": "te", "format": "topics"},
                                                 "predictions": "p.jsonl"}}})
    assert [w for w, _ in plan.dataset_places()] == ["families.evidence.train", "families.evidence.test"]


def test_the_core_assembles_from_the_registry_and_names_no_family():
    """plan.py and cli/root.py loop over the registry: no family name and no family settings import in them."""
    import ast

    src = Path(__file__).resolve().parents[1] / "src" / "reasonscope"
    for rel in ("plan.py", "cli/root.py", "cli/families.py"):
        tree = ast.parse((src / rel).read_text(encoding="utf-8"))
        named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
                {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        strings = " ".join(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
        modules = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        for fam in registry.FAMILY_NAMES:
            assert fam not in named, f"{rel} names {fam}"
            assert not any(m.split(".")[0] == fam for m in modules), f"{rel} imports {fam}"
            assert f"families.{fam}" not in strings and f"{fam}." not in strings, f"{rel} spells {fam}"


def test_reserved_names_cover_the_top_level_keys_of_summary_json_and_of_a_plan():
    from reasonscope.output_files import summary_model
    from reasonscope.plan import Plan, ScorePlan

    summary_keys = set(summary_model(registry.all_families()).model_fields) - set(family_names())
    assert summary_keys == {"schema_version", "run", "config", "notes", "generations", "left_out"}
    assert summary_keys | set(Plan.model_fields) | set(ScorePlan.model_fields) <= registry.RESERVED_NAMES


def test_the_write_a_family_page_shows_every_file_of_the_example_as_it_is():
    import re

    root = EXAMPLE_SRC.parents[2]
    page = (root / "docs" / "write-a-family.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- snippet: skip \((examples/trace-length-family/[^)]+)\) -->\n```\w*\n(.*?)\n```", page, re.S)
    package = EXAMPLE_SRC.parent
    files = {str(p.relative_to(root)) for p in package.rglob("*") if p.suffix in (".py", ".j2", ".toml")
             and p.name != "__init__.py" and "__pycache__" not in p.parts
             and p.relative_to(package).parts[0] != "build"}  # a non-editable install leaves build/lib copies
    assert {rel for rel, _ in blocks} == files
    for rel, code in blocks:  # each file after its module docstring, verbatim
        assert code in (root / rel).read_text(encoding="utf-8"), rel


def test_family_base_defaults_of_the_assembly_members():
    base = FamilyBase()
    assert base.score_settings is None and base.rank == 0 and base.commands is None
    assert base.needs_plan_models(None, None) is False
    assert base.own_datasets(None) == []
    assert base.check_plan(None, None) is None
