"""Command-line options named like a setting take that setting's default and help (one home per setting).

Every option of a command that builds a plan section is looked up in the settings models of that section
(:data:`SECTIONS`, by its parameter name or :data:`ALIASES`); where it matches, its default must be the
field's default and its help must start with the field's description, whether the option was written with
:func:`reasonscope.cli.options.setting_option` or by hand. The few options that match a setting's name but
carry something else (a file name that becomes a dataset section, a ``backend:model`` string) are listed in
:data:`OTHER_MEANING` with the reason.
"""

from __future__ import annotations

import pytest
import typer
import typer.core
from pydantic import BaseModel

from reasonscope.attack.settings import AttackConfig
from reasonscope.attributes.settings import AttributesConfig, AutomaticAttributesConfig
from reasonscope.cli.options import setting_default, setting_help, setting_option
from reasonscope.cli.root import app
from reasonscope.evidence.settings import EvidenceConfig
from reasonscope.information.settings import InformationConfig
from reasonscope.plan import ExperimentConfig, ScoreInputConfig
from reasonscope.shared_settings import DatasetConfig, StatsConfig

SECTIONS: dict[str, tuple[type[BaseModel], ...]] = {
    "attack": (AttackConfig, ExperimentConfig),
    "evidence": (EvidenceConfig, ExperimentConfig),
    "information train": (InformationConfig, ExperimentConfig),
    "information score": (InformationConfig,),
    "attributes judge": (AttributesConfig, AutomaticAttributesConfig, ExperimentConfig),
    "attributes explain": (AttributesConfig, ExperimentConfig),
    "attributes elo": (AttributesConfig, ExperimentConfig),
    "score": (ScoreInputConfig, ExperimentConfig),
    "run": (DatasetConfig,),
    "demo": (ExperimentConfig,),
}
"""Command -> the settings models of the plan sections it fills from its options."""

ALIASES = {"method": "methods", "resamples": "rating_resamples", "attribute": "attributes", "judge": "judges",
           "text_field": "text_fields", "generator": "generators"}
"""Option parameter -> setting, where the option's name is the singular of a list setting or shorter."""

OTHER_MEANING = {
    ("attack", "dataset"): "a file or 'synthetic', built into the dataset section",
    ("evidence", "train"): "a file or 'topics', built into the dataset section",
    ("evidence", "test"): "a file or 'topics', built into the dataset section",
    ("information train", "train"): "a file or 'synthetic', built into the dataset section",
    ("information train", "test"): "a file or 'synthetic', built into the dataset section",
    ("information score", "test"): "a file or 'synthetic', built into the dataset section",
    ("attributes judge", "nli"): "backend:model in one string, built into the NLI section",
}
"""Options named like a setting that hold something else, with why."""

OWN_DEFAULT = {"name": "each command names its run after itself", "preferences": "required on the command line"}
"""Settings whose default the command replaces on purpose (the help is still the setting's)."""


def _commands() -> dict:
    root = typer.main.get_command(app)
    out = {}
    ctx = typer.Context(root)
    for name in root.list_commands(ctx):
        cmd = root.get_command(ctx, name)
        if isinstance(cmd, typer.core.TyperGroup):
            for sub in cmd.list_commands(ctx):
                out[f"{name} {sub}"] = cmd.get_command(ctx, sub)
        else:
            out[name] = cmd
    return out


def _tied(path: str):
    command = _commands()[path]
    for param in command.params:
        if not isinstance(param, typer.core.TyperOption) or (path, param.name) in OTHER_MEANING:
            continue
        for model in SECTIONS[path]:
            field = next((f for f in (param.name, ALIASES.get(param.name)) if f in model.model_fields), None)
            if field is not None:
                yield param, model, field
                break


def _plain(value):
    return list(value) if isinstance(value, tuple | list) else value


def test_every_command_of_the_table_exists():
    assert set(SECTIONS) <= set(_commands())


@pytest.mark.parametrize("path", sorted(SECTIONS))
def test_options_named_like_a_setting_take_its_default_and_help(path):
    tied = list(_tied(path))
    assert tied, f"{path}: no option tied to a setting"
    for param, model, field in tied:
        where = f"reasonscope {path} --{param.name.replace('_', '-')} ({model.__name__}.{field})"
        described = model.model_fields[field].description
        assert described, f"{where}: the setting has no description to show as help"
        assert (param.help or "").startswith(described), f"{where}: help {param.help!r} is not the setting's"
        if field in OWN_DEFAULT:
            continue
        want = setting_default(model, field)
        assert _plain(param.default) == _plain(want) or (want is None and param.default in ([], ())), \
            f"{where}: default {param.default!r}, setting {want!r}"


def test_the_bounds_come_from_the_setting():
    options = {p.name: p for p in _commands()["evidence"].params}
    assert (options["k"].min, options["k"].max) == (1, 1000)  # EvidenceConfig.k: ge=1, le=1000
    assert (options["delta"].min, options["delta"].max) == (0, 1)
    attack = {p.name: p for p in _commands()["attack"].params}
    assert (attack["cot_tokens"].min, attack["cot_tokens"].max) == (4, 2048)
    assert attack["ratio"].min is None and attack["ratio"].max == 1  # gt=0 is left to the plan's check


def test_an_out_of_range_value_is_refused_by_the_option(tmp_path):
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["evidence", "--train", "topics", "--test", "topics", "--model", "mock/x",
                                   "--k", "0", "--output-dir", str(tmp_path)])
    assert res.exit_code == 2
    assert "Invalid value for '--k': Input should be greater than or equal to 1" in res.output
    assert not (tmp_path / "evidence").exists()  # refused before any plan or run directory


def test_setting_option_reads_default_help_and_bounds():
    opt = setting_option(EvidenceConfig, "delta_chars")
    assert (opt.default, opt.min, opt.max) == (1, 0, 50)
    assert opt.help == EvidenceConfig.model_fields["delta_chars"].description
    listed = setting_option(EvidenceConfig, "matchers", note="Repeat the option.")
    assert listed.default == ["exact", "token", "edit", "edit_chars"]  # the factory called
    assert listed.help.endswith("stream. Repeat the option.")
    assert setting_option(ExperimentConfig, "name", default="demo").default == "demo"
    assert setting_option(EvidenceConfig, "k", min=2).min == 2  # an explicit bound wins


def test_setting_option_names_what_is_missing():
    with pytest.raises(KeyError, match="EvidenceConfig has no setting 'kk'"):
        setting_default(EvidenceConfig, "kk")
    with pytest.raises(ValueError, match=r"StatsConfig\.foo|has no description"):
        setting_help(_NoDescription, "x")


class _NoDescription(StatsConfig):
    x: int = 3
