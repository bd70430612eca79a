"""A family's stored settings with its settings model's defaults filled in, at every depth (compare.defaults)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from reasonscope.attributes.settings import AttributesConfig
from reasonscope.compare.defaults import settings_model, with_defaults
from reasonscope.compare.metrics import settings_differences


class Leaf(BaseModel):
    spec: str
    runtime: str = "auto"
    options: dict = Field(default_factory=dict)


class Other(BaseModel):
    size: int = 3


class Settings(BaseModel):
    samples: int = 3
    name: str
    leaf: Leaf = Field(default_factory=lambda: Leaf(spec="x"))
    maybe: Leaf | None = None
    leaves: list[Leaf] = Field(default_factory=list)
    by_key: dict[str, Leaf] = Field(default_factory=dict)
    either: Leaf | Other | None = None


def test_missing_fields_with_defaults_are_filled_at_every_depth_and_stored_values_kept():
    stored = {"name": "n", "samples": 5, "leaf": {"spec": "a"}, "maybe": {"spec": "b", "runtime": "torch"},
              "leaves": [{"spec": "c"}], "by_key": {"k": {"spec": "d"}}, "either": {"spec": "e"}, "gone": 1}
    assert with_defaults(stored, Settings) == {
        "name": "n", "samples": 5, "gone": 1,  # a key the model no longer declares is kept
        "leaf": {"spec": "a", "runtime": "auto", "options": {}},
        "maybe": {"spec": "b", "runtime": "torch", "options": {}},
        "leaves": [{"spec": "c", "runtime": "auto", "options": {}}],
        "by_key": {"k": {"spec": "d", "runtime": "auto", "options": {}}},
        "either": {"spec": "e"},  # two settings models may apply: left as stored
    }
    assert stored["leaf"] == {"spec": "a"}  # not modified


def test_a_missing_nested_model_is_its_default_dumped_and_a_required_field_is_never_filled():
    assert with_defaults({}, Settings) == {"samples": 3, "leaf": {"spec": "x", "runtime": "auto", "options": {}},
                                           "maybe": None, "leaves": [], "by_key": {}, "either": None}
    assert with_defaults({"leaf": None, "leaves": "odd"}, Settings)["leaves"] == "odd"
    assert with_defaults("not a dict", Settings) == "not a dict"


def test_differences_read_a_missing_setting_as_its_default_only_with_the_model():
    older, newer = {"name": "n", "leaves": [{"spec": "s"}]}, {"name": "n", "leaves": [{"spec": "s", "runtime": "auto"}]}
    assert settings_differences(older, newer, Settings) == []
    assert settings_differences(older, newer) == [("leaves.s.runtime", None, "auto")]
    changed = {"name": "n", "leaves": [{"spec": "s", "runtime": "llama-cpp"}]}
    assert settings_differences(older, changed, Settings) == [("leaves.s.runtime", "auto", "llama-cpp")]
    assert settings_differences({"name": "n"}, {}, Settings) == [("name", "n", None)]


def test_a_model_config_runtime_in_a_real_family_settings_model():
    older = {"judges": [{"name": "j", "spec": "smollm2"}]}
    assert with_defaults(older, AttributesConfig)["judges"][0]["runtime"] == "auto"
    assert settings_differences(older, {"judges": [{"name": "j", "spec": "smollm2", "runtime": "auto"}]},
                                AttributesConfig) == []


def test_settings_model_is_none_where_the_family_is_unknown():
    assert settings_model(None, "behavior") is None
    assert settings_model({"x": Settings}.__getitem__, "behavior") is None
    assert settings_model({"x": Settings}.__getitem__, "x") is Settings
