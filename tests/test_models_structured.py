"""The ``structured`` request option: constrained decoding on a tiny local model (random weights, so any
valid answer is the grammar's doing), the option's validation and its place in the cache key."""

from __future__ import annotations

import asyncio
import json
import re

import jsonschema
import pytest

from reasonscope.models.base import GenerationRequest
from reasonscope.models.registry import create_model
from reasonscope.models.structured import StructuredError, validate, wrapped_schema
from reasonscope.plan import ModelConfig

pytest.importorskip("llguidance")

SCHEMA = {"type": "object", "properties": {
    "label": {"type": "string", "enum": ["entailment", "neutral", "contradiction"]},
    "score": {"type": "integer", "minimum": 0, "maximum": 10},
    "why": {"type": "string", "maxLength": 12}},
    "required": ["label", "score", "why"], "additionalProperties": False}


def _requests(structured, n=6, temperature=1.0):
    return [GenerationRequest(messages=[{"role": "user", "content": f"Ana has {i} apples ."}], max_tokens=80,
                              temperature=temperature, seed=i, item_id=f"i{i}", structured=structured)
            for i in range(n)]


def test_constrained_json_always_parses_against_the_schema(tiny_causal_lm):
    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}", batch_size=6))
    completions = asyncio.run(model.generate(_requests({"json_schema": SCHEMA})))
    for c in completions:
        assert c.error is None and c.constraint == "grammar:llguidance"
        jsonschema.validate(json.loads(c.text), SCHEMA)
    # the same random model, unconstrained, writes no JSON at all: the grammar made the difference
    free = asyncio.run(model.generate(_requests(None)))
    assert all(c.constraint is None for c in free)
    assert not any(c.text.strip().startswith("{") for c in free)


def test_choice_regex_and_free_rows_in_one_batch(tiny_causal_lm):
    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}", batch_size=8))
    choice = {"choice": ["yes", "no", "not sure"]}
    regex = {"regex": r"Answer: [0-9]{1,3}"}
    reqs = _requests(choice, 3) + _requests(regex, 3) + _requests(None, 2)
    out = asyncio.run(model.generate(reqs))
    assert all(c.text in choice["choice"] for c in out[:3])
    assert all(re.fullmatch(regex["regex"], c.text) for c in out[3:6])
    assert [c.constraint for c in out[6:]] == [None, None]


def test_option_validation_and_wrapping():
    assert validate(None) is None
    with pytest.raises(StructuredError, match="exactly one of json_schema, choice, regex"):
        validate({"choice": ["a"], "regex": "a"})
    with pytest.raises(StructuredError, match="non-empty list"):
        validate({"choice": []})
    assert wrapped_schema({"json_schema": SCHEMA}) == (SCHEMA, False)
    schema, wrapped = wrapped_schema({"choice": ["a", "b"]})
    assert wrapped and schema["properties"]["value"] == {"type": "string", "enum": ["a", "b"]}
    schema, wrapped = wrapped_schema({"regex": "[0-9]+"})
    assert schema["properties"]["value"] == {"type": "string", "pattern": "^([0-9]+)$"}  # the whole answer
    assert wrapped_schema({"regex": "^a|b$"})[0]["properties"]["value"]["pattern"] == "^a|b$"


def test_the_option_is_part_of_the_cache_key():
    from reasonscope.execution.calls import planned_request

    model = create_model(ModelConfig(spec="mock/reasoner"))
    msgs = [{"role": "user", "content": "q"}]
    free = planned_request(model, "d", None, "v", 0, msgs, 0, "t", {})
    a = planned_request(model, "d", None, "v", 0, msgs, 0, "t", {}, structured={"choice": ["a", "b"]})
    b = planned_request(model, "d", None, "v", 0, msgs, 0, "t", {}, structured={"choice": ["a", "c"]})
    assert len({free.key, a.key, b.key}) == 3
    assert "structured" not in free.request.gen_config()  # keys of free requests are unchanged
