"""The YAML plan as pydantic models.

A plan names the experiment, the models, the datasets and the families to score with. Everything is
validated before any model is called: unknown keys, wrong types and impossible values raise
:class:`PlanError`, whose message names the file, the line, the key path and what was expected.
Plan files are read as YAML 1.2 with duplicate keys, recursive aliases and alias bombs refused, and a
file larger than 256 KiB or one that is plainly not a plan (binary, JSON Lines, CSV) refused before it is
parsed, saying what it looks like (:mod:`reasonscope.storage.yaml_io`); the run name and output folder are checked as
:mod:`reasonscope.storage.rundir` says (one path component; no file where a folder must go).

``reasonscope schema`` prints :func:`plan_json_schema`.

The settings shared layers read (models, datasets, statistics) live in :mod:`reasonscope.shared_settings`,
the NLI and similarity scorers' in :mod:`reasonscope.scorers.settings`; each family's settings in
``<family>/settings.py``. This module
assembles them into the plan (:class:`FamiliesConfig`, :class:`Plan`, :class:`ScorePlan`) from the families
of :mod:`reasonscope.registry` (built-in and plugins alike, once, at import: :func:`families_section`) and
still finds a family's settings names here for code written before they moved (``from reasonscope.plan import
BehaviorConfig``).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, create_model, field_validator, model_validator

from .family import Family
from .registry import DEFAULT_FAMILIES, all_families, enabled_families, family_names, get_family
from .scorers.settings import NLIConfig, SimilarityConfig
from .shared_settings import (
    DatasetConfig,
    ModelConfig,
    StatsConfig,
    Strict,
)
from .storage.rundir import RUN_NAME_PATTERN, check_output_dir, check_run_dir, check_run_name
from .storage.yaml_io import MAX_PLAN_BYTES, YAMLReadError, describe_non_plan, read_yaml
from .types import AnswerType

__all__ = [
    "DatasetConfig", "ExperimentConfig", "FamiliesConfig", "ModelConfig", "NLIConfig", "Plan", "PlanError",
    "ScoreFamiliesConfig", "ScoreInputConfig", "ScorePlan", "SimilarityConfig", "StatsConfig", "Strict",
    "families_section", "format_validation_error", "load_plan", "parse_plan", "plan_json_schema",
]


def __getattr__(name: str) -> Any:
    """A family's settings names, as this module exported them before each family owned its settings.

    ``from reasonscope.plan import BehaviorConfig`` finds the name in the settings module of the registered
    families (the one that defines ``Family.settings``); new code imports it from the family's package.
    """
    if not name.startswith("_"):
        import sys

        for family in all_families():
            for model in (family.settings, family.score_settings):
                module = sys.modules.get(getattr(model, "__module__", ""))
                if module is not None and hasattr(module, name):
                    return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PlanError(ValueError):
    """A plan (or plan fragment) that cannot be run. The message is meant for the user as is."""


class ExperimentConfig(Strict):
    """The ``experiment`` section of a plan: run name, seed and the parent directory of run directories."""

    name: str = Field("experiment", description="Run name; the run directory is output_dir/name. One folder "
                      "name: letters, digits, '_', '.', '-' (not '.' or '..').",
                      json_schema_extra={"pattern": RUN_NAME_PATTERN.pattern})
    seed: int = Field(0, description="Seed for sampling, mock models, bootstrap and synthetic data.")
    output_dir: str = Field("runs", min_length=1, description="Parent directory of run directories.")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        return check_run_name(value)

    @field_validator("output_dir")
    @classmethod
    def _output_dir_is_a_folder(cls, value: str) -> str:
        check_output_dir(value)
        return value

    @model_validator(mode="after")
    def _run_dir_is_a_folder(self) -> ExperimentConfig:
        check_run_dir(self.output_dir, self.name)
        return self


def families_section(families: tuple[Family, ...], *, name: str = "FamiliesConfig", score: bool = False,
                     doc: str | None = None) -> type[Strict]:
    """The model of a plan's ``families`` section: one optional field per family, its settings model.

    Args:
        families: The families, in the order of the fields (the registry's canonical order).
        name: The model's name (its title in the JSON schema).
        score: Use each family's ``score_settings`` (a ``reasonscope score`` plan); a family without one is
            left out.
        doc: The model's docstring (its description in the JSON schema).

    Returns:
        A :class:`Strict` model (unknown keys refused) whose field ``<family.name>`` is ``settings | None``,
        default None (the family is off).
    """
    fields: dict[str, Any] = {}
    for family in families:
        model = family.score_settings if score else family.settings
        if model is not None:
            fields[family.name] = (model | None, None)
    return create_model(name, __base__=Strict, __module__=__name__,
                        __doc__=doc or "The ``families`` section of a plan: one settings block per family, "
                        "None when it is off.", **fields)


def _default_families(section: type[Strict], score: bool = False) -> Strict:
    """The section with the registry's default families on (:data:`reasonscope.registry.DEFAULT_FAMILIES`)."""
    def settings(name: str) -> Any:
        family = get_family(name)
        return (family.score_settings if score else family.settings)()

    return section(**{name: settings(name) for name in DEFAULT_FAMILIES})


FamiliesConfig = families_section(
    all_families(), doc="The ``families`` section of a plan: one settings block per metric family, None when it "
    "is off.")


class Plan(Strict):
    """A run plan (``reasonscope run``): experiment, models, datasets, families and statistics settings.

    Validated with :func:`parse_plan` / :func:`load_plan`; the families default to behaviour alone.
    """

    # The docstring is the schema's description (kept as published). The default families are the
    # registry's DEFAULT_FAMILIES; what each enabled family needs of the plan is the family's to say
    # (Family.check_plan, needs_plan_models, own_datasets).

    experiment: ExperimentConfig = Field(default_factory=ExperimentConfig)
    models: list[ModelConfig] = Field(default_factory=list)
    datasets: list[DatasetConfig] = Field(default_factory=list)
    families: FamiliesConfig = Field(default_factory=lambda: _default_families(FamiliesConfig))
    stats: StatsConfig = Field(default_factory=StatsConfig)

    @model_validator(mode="after")
    def _something_to_do(self) -> Plan:
        enabled = enabled_families(self.families)  # scoring order: the families that generate on their own first
        if not enabled:
            names = [name for name in family_names() if name in type(self.families).model_fields]
            raise ValueError(f"no family enabled: set one of {', '.join('families.' + n for n in names)}")
        for family, settings in enabled:
            family.check_plan(settings, self)
        needing = [family.name for family, settings in enabled if family.needs_plan_models(settings, self)]
        if needing and not self.models:
            raise ValueError("models: List should have at least 1 item (generation needs a model: "
                             f"{', '.join('families.' + n for n in needing)})")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> Plan:
        for what, names in (("model", [m.display_name for m in self.models]),
                            ("dataset", [d.name for d in self.datasets])):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{what} names must be unique; repeated: {dupes}")
        # the store keeps items by dataset name: a name a family's own dataset also uses must be the same
        # dataset, or one set's items would stand for the other's
        named: dict[str, tuple[str, Any]] = {}
        for where, cfg in self.dataset_places():
            first = named.setdefault(cfg.name, (where, cfg))
            if first[1] != cfg:
                raise ValueError(f"dataset name {cfg.name!r} names two different datasets ({first[0]} and {where}); "
                                 "give them different names")
        return self

    def dataset_places(self) -> list[tuple[str, Any]]:
        """Every dataset the plan reads, with where the plan names it.

        ``datasets[i]``, then each enabled family's own (:meth:`reasonscope.family.Family.own_datasets`, e.g.
        ``families.<name>.train``), in the canonical order.
        """
        places = [(f"datasets[{i}]", d) for i, d in enumerate(self.datasets)]
        for family, settings in enabled_families(self.families, canonical=True):
            places += [(f"families.{family.name}.{key}", cfg) for key, cfg in family.own_datasets(settings)]
        return places

    @property
    def run_dir(self) -> Path:
        """The run directory: ``experiment.output_dir / experiment.name``."""
        return Path(self.experiment.output_dir) / self.experiment.name


class ScoreInputConfig(Strict):
    """The ``input`` section of a score plan: where the existing outputs are and how to read them."""

    path: str = Field(..., min_length=1, description="JSONL / JSON / CSV of existing outputs, or a log file or "
                      "folder of another framework (see `format`).")
    format: Literal["predictions", "lm-eval", "inspect"] = Field(
        "predictions", description="predictions: a file mapped with `mapping` (--map); lm-eval: lm-evaluation-"
        "harness samples files (--log_samples); inspect: inspect-ai eval logs (--from on the command line).")
    mapping: dict[str, str] = Field(default_factory=dict, description="Field -> column, as in --map.")
    skip_bad_rows: bool = Field(False, description="Skip malformed rows (counted and listed) instead of failing.")
    answer_type: AnswerType | None = Field(None, description="Answer type for rows without one.")
    budget: int | None = Field(None, gt=0, description="Token budget for ES when rows carry no max_tokens.")
    tokenizer: str | None = Field(None, description="HF id or path used to count tokens for ES.")
    log_run: str | None = Field(None, min_length=1, description="For a log folder holding several runs of a task: "
                                "the run to read (a file name, lm-eval's run date, an inspect run or eval id); "
                                "by default the latest run of each task is read.")

    @model_validator(mode="after")
    def _mapping_only_for_predictions(self) -> ScoreInputConfig:
        if self.mapping and self.format != "predictions":
            raise ValueError(f"mapping applies to predictions files; a {self.format} log has a fixed field mapping")
        if self.log_run is not None and self.format == "predictions":
            raise ValueError("log_run (--log-run) applies to lm-eval and inspect logs (--from)")
        return self


ScoreFamiliesConfig = families_section(
    all_families(), name="ScoreFamiliesConfig", score=True,
    doc="The ``families`` section of a score plan: the families that can score imported outputs.")


class ScorePlan(Strict):
    """A plan for `reasonscope score`: existing outputs in, the same outputs as a generated run out."""

    experiment: ExperimentConfig = Field(default_factory=lambda: ExperimentConfig(name="scored"))
    input: ScoreInputConfig
    families: ScoreFamiliesConfig = Field(default_factory=lambda: _default_families(ScoreFamiliesConfig, score=True))
    stats: StatsConfig = Field(default_factory=StatsConfig)

    @property
    def run_dir(self) -> Path:
        """The run directory: ``experiment.output_dir / experiment.name``."""
        return Path(self.experiment.output_dir) / self.experiment.name


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`Plan` (for editors and ``reasonscope schema``)."""
    return Plan.model_json_schema()


# ----------------------------------------------------------------------------------------------
# Loading with file / line / key-path error messages


def format_validation_error(err: ValidationError, source: str, lines: dict[tuple, int] | None = None) -> str:
    """Word a pydantic validation error of a plan: one line per error with key path, line and message.

    Args:
        err: The validation error.
        source: The plan's file name (or ``<plan>``), put first on every message.
        lines: Key path -> line in the file (:mod:`reasonscope.storage.yaml_io`); the line of the nearest
            enclosing key is named when the failing key has none.

    Returns:
        The message, one line per error after a header that counts them.
    """
    out = [f"{source}: invalid plan ({err.error_count()} error{'s' if err.error_count() > 1 else ''})"]
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        key = ".".join(str(p) for p in loc) or "<root>"
        line = None
        if lines:
            for n in range(len(loc), -1, -1):
                if loc[:n] in lines:
                    line = lines[loc[:n]]
                    break
        where = f"{source}:{line}" if line else source
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not part of the plan schema; check the spelling)"
            if len(loc) == 2 and loc[0] == "families":
                msg = _unknown_family(str(loc[1]))
        got = "" if e["type"] in ("missing", "extra_forbidden") else f" (got {e.get('input')!r:.80})"
        out.append(f"  {where}: {key}: {msg}{got}")
    return "\n".join(out)


def _unknown_family(name: str) -> str:
    """Why ``families.<name>`` is not a key of the plan: a plugin that did not load, or no such family.

    Names the plugin's distribution and error (:attr:`reasonscope.registry.FamilySource.message`), else the
    registered families, with close names first.
    """
    from .registry import family_sources

    for source in family_sources():
        if source.name == name and source.error:
            return source.message or ""
    known = list(family_names())
    close = difflib.get_close_matches(name, known, n=2)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return (f"unknown family ({hint}registered: {', '.join(known)}; a plugin family is registered once its "
            "distribution is installed: `reasonscope families` lists them)")


def parse_plan(data: Any, source: str = "<plan>", lines: dict[tuple, int] | None = None, model: type = Plan):
    """Validate plan data (already parsed from YAML or JSON) as ``model``.

    Args:
        data: The parsed plan; must be a mapping.
        source: The file name used in error messages.
        lines: Key path -> line, to name the line of each error.
        model: The plan class, :class:`Plan` or :class:`ScorePlan`.

    Returns:
        The validated plan.

    Raises:
        PlanError: When ``data`` is not a mapping or does not validate (:func:`format_validation_error`).
    """
    if not isinstance(data, dict):
        raise PlanError(f"{source}: the plan must be a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise PlanError(format_validation_error(err, source, lines)) from None


def load_plan(path: str | Path, model: type = Plan):
    """Read and validate a YAML plan. Raises :class:`PlanError` naming file, line and key path."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a FIFO would block, /dev/zero never end
        raise PlanError(f"{path}: not a regular file; expected a YAML plan file")
    try:
        with path.open("rb") as fh:  # at most MAX_PLAN_BYTES + 1 bytes are read, whatever the file holds
            raw = fh.read(MAX_PLAN_BYTES + 1)
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file") from None
    except OSError as err:
        raise PlanError(f"{path}: cannot read the plan ({err.strerror or err})") from None
    what = describe_non_plan(raw[:8192])
    if len(raw) > MAX_PLAN_BYTES:
        size = path.stat().st_size
        raise PlanError(f"{path}: {size:,} bytes, more than the {MAX_PLAN_BYTES:,} bytes a plan file may hold "
                        f"(reasonscope.storage.yaml_io.MAX_PLAN_BYTES; plans are a few KB)"
                        + (f"; it looks like {what}" if what else "") + ": is this the plan?")
    if what:
        raise PlanError(f"{path}: not a YAML plan: it looks like {what}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PlanError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        data, lines = read_yaml(text, str(path))
    except YAMLReadError as err:
        raise PlanError(str(err)) from None
    if data is None:
        raise PlanError(f"{path}: the plan is empty")
    return parse_plan(data, str(path), lines, model)
