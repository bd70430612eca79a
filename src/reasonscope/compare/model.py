"""The typed result of comparing two runs (:class:`RunComparison`) and its published JSON Schema.

``reasonscope compare BASE NEW --format json`` prints a :class:`RunComparison`; the Python API
(``reasonscope.compare(base, new)``, :func:`reasonscope.compare.compare_runs`) returns one. Every model is
closed (``extra="forbid"``): a key that is not declared here is an error, so a change to the output
changes this module, :data:`SCHEMA_VERSION` and the committed ``docs/schemas/compare.schema.json``
(written by ``reasonscope compare --schema FILE``; a test checks it is current).

Differences are always **NEW minus BASE** on the items both runs hold, in the metric's own unit.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.1.0"
"""Version of the comparison's schema (semantic versioning), recorded as ``schema_version``."""

Verdict = Literal["worse", "better", "no change", "changed", "not compared"]
"""A metric's verdict: ``worse`` / ``better`` (significant after Holm, in the catalogue's direction),
``no change`` (not significant), ``changed`` (significant, but the metric has no better direction), or
``not compared`` (no value on either side, or a definition that differs)."""


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunSide(_Closed):
    """One of the two runs as it was read."""

    path: str = Field(description="the run folder as given")
    store: str = Field(description="the store file read (opened read-only)")
    run_id: str
    status: str = Field(description="finished, interrupted or running (as recorded)")
    created: float | None = Field(None, description="when the run started (epoch seconds)")
    seed: int | None = None
    models: list[str] = Field(description="the models with item-level scores, sorted")
    datasets: list[str] = Field(description="the datasets of the run's items, sorted")
    families: list[str] = Field(description="the families with item-level scores, sorted")
    items: int = Field(description="distinct items with an item-level score")
    templates: dict[str, list[str]] = Field(
        default_factory=dict,
        description="use -> the prompt templates its generations were made with, over the run's models: answers "
                    "(the answers to the plan's questions), FAMILY.requests (a family's own requests), FAMILY.calls "
                    "(the calls its scores record: the judges), FAMILY.records (its own records); 'unknown': "
                    "stored without one, by an older reasonscope")


class Mismatch(_Closed):
    """Something that differs between the runs beyond the models compared: flagged, never silently compared."""

    kind: Literal["definition", "dataset", "models"] = Field(
        description="definition: a family's settings differ (its metrics are computed differently: another "
                    "scorer model, prompt template or judge); dataset: items with one id differ in content; models: a "
                    "model of one run has no counterpart")
    family: str | None = None
    what: str = Field(description="the setting's path (or 'prompt template (USE)'), the dataset or the model")
    base: Any = Field(None, description="definition: BASE's value; dataset: how many items differ; models: the "
                                        "BASE model without a partner")
    new: Any = Field(None, description="definition: NEW's value; dataset: up to 10 of the items that differ; "
                                       "models: the NEW model without a partner")
    message: str


class MetricComparison(_Closed):
    """One metric of one model pair: the paired difference on the shared items, its test and verdict."""

    family: str
    metric: str = Field(description="the metric as stored (e.g. CQ, coverage_support:exact, token.success)")
    label: str = Field(description="the human label from the metric catalogue")
    spec: str | None = Field(description="the catalogue entry giving direction and range, or None")
    base_model: str
    new_model: str
    higher_is_better: bool | None = Field(description="direction from the catalogue; None: neither")
    value_range: tuple[float, float] | None = Field(description="the metric's range; None: unbounded")
    kind: Literal["share", "bounded", "unbounded"] = Field(
        description="share: every value 0 or 1; bounded: values in a known range; unbounded: no known range")
    paired: bool = Field(description="False only when the runs share no item: an unpaired two-sample comparison")
    n_shared: int = Field(description="items (or clusters) with a value on both sides: the pairs tested")
    only_in_base: int = Field(description="items with a value in BASE only")
    only_in_new: int = Field(description="items with a value in NEW only")
    base_mean: float | None = Field(description="BASE's mean over the pairs (over its items when unpaired)")
    new_mean: float | None = Field(description="NEW's mean over the pairs (over its items when unpaired)")
    difference: float | None = Field(description="mean of NEW - BASE over the pairs")
    ci_low: float | None
    ci_high: float | None
    interval: str = Field(description="how the interval was computed")
    p_value: float | None = Field(description="two-sided p-value of the test")
    p_holm: float | None = Field(description="Holm-adjusted over every metric compared")
    test: str = Field(description="the test, sidedness and how its null distribution was obtained")
    effect_size: float | None = Field(
        description="standardised difference: mean(d) / sd(d) (Cohen's d_z) when paired, Cohen's d (pooled sd) "
                    "when unpaired; None when the sd is 0")
    verdict: Verdict
    gates: bool = Field(description="whether the metric is among those the gate reads (--metrics)")
    fails_gate: bool = Field(description="worse after Holm, beyond --min-effect, and gating")
    definition_differs: bool = Field(description="the family's settings differ between the runs")
    clustered: bool = Field(description="several scores per item: averaged per item before the test")
    note: str | None = None


class ItemChange(_Closed):
    """One item whose score changed most, with both outputs (the HTML drill-down)."""

    family: str
    metric: str
    base_model: str
    new_model: str
    item: str = Field(description="the item as scored (dataset/item id)")
    base_value: float
    new_value: float
    change: float = Field(description="NEW - BASE")
    question: str | None = Field(None, description="the item's input")
    target: Any = None
    base_output: str | None = Field(None, description="BASE model's first completion of the item")
    new_output: str | None = Field(None, description="NEW model's first completion of the item")


class RunComparison(_Closed):
    """The comparison of two runs and the gate's decision (``exit_code``)."""

    schema_version: str = Field(default=SCHEMA_VERSION, description="version of this schema")
    base: RunSide
    new: RunSide
    pairs: dict[str, str] = Field(description="BASE model -> NEW model, the pairs compared")
    confidence: float = Field(description="level of the intervals")
    alpha: float = Field(description="family-wise error rate of the gate (Holm over every metric compared)")
    min_effect: float = Field(description="a worse difference must exceed this (in the metric's unit) to fail")
    metrics_selected: list[str] | None = Field(description="--metrics as given (None: every metric)")
    allow_mismatch: bool
    holm: str = Field(description="what Holm's adjustment ran over")
    metrics: list[MetricComparison]
    items_only_in_base: list[str] = Field(description="items with a score in BASE only")
    items_only_in_new: list[str] = Field(description="items with a score in NEW only")
    mismatches: list[Mismatch]
    not_checked: list[str] = Field(
        default_factory=list, description="what could not be checked for mismatches, and why (a store from before "
                                          "prompt templates were recorded): said, never blocking")
    changes: list[ItemChange] = Field(description="per metric, the items whose score changed most")
    worse: int = Field(description="metrics worse after Holm (gating or not)")
    better: int = Field(description="metrics better after Holm")
    failed: int = Field(description="metrics that fail the gate")
    exit_code: Literal[0, 1, 2] = Field(
        description="0: no gating metric is significantly worse; 1: at least one is; 2: cannot be compared")
    reason: str = Field(description="one line saying why the exit code is what it is")


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of :class:`RunComparison`, with its ``$id`` and version."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"reasonscope/compare-{SCHEMA_VERSION}.schema.json", "version": SCHEMA_VERSION,
            **RunComparison.model_json_schema()}


__all__ = ["SCHEMA_VERSION", "ItemChange", "MetricComparison", "Mismatch", "RunComparison", "RunSide", "Verdict",
           "json_schema"]
