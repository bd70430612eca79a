"""Structured outputs: one request option, honoured natively by each provider.

A request may carry ``structured``, exactly one of

* ``{"json_schema": {...}}``: the answer is one JSON value valid against the schema;
* ``{"choice": ["yes", "no", ...]}``: the answer is exactly one of the strings;
* ``{"regex": "..."}``: the whole answer matches the regular expression.

How each provider honours it (the way used is recorded on the completion, ``Completion.constraint``):

* ``hf/...`` and ``smollm2``: constrained decoding with llguidance (``reasonscope[structured]``): at each
  step the tokens that cannot continue a valid answer are masked out of the logits, so the answer always
  parses (unless cut at ``max_tokens``). Recorded as ``grammar:llguidance``.
* ``openai/...``: ``response_format = {"type": "json_schema", "json_schema": {"name", "schema",
  "strict": true}}``. Choices and regexes travel as a schema (:func:`wrapped_schema`: an object with one
  string field ``value``, an ``enum`` or a ``pattern``), and the provider returns the unwrapped string.
  Recorded as ``response_format``.
* ``openai-compatible`` servers (vLLM, llama.cpp server, Ollama): the same ``response_format``. A server
  that rejects it (HTTP 400/422) gets the request again without it; the answer is kept and recorded as
  ``prompt-only: <the server's message>``, and a warning is printed once per model.
* ``anthropic/...``: a forced tool (``tool_choice = {"type": "tool", "name": "answer"}``) whose
  ``input_schema`` is the schema (wrapped as above when it is not an object schema); the answer is the
  tool call's input as JSON. Recorded as ``tool``.

The option is part of the request's cache key (it is in ``GenerationRequest.gen_config``), so a
constrained and a free answer to the same messages are different cache entries.
"""

from __future__ import annotations

import json
from typing import Any

WRAP_FIELD = "value"


class StructuredError(ValueError):
    """A ``structured`` option that is not one of the three documented forms."""


def validate(structured: dict[str, Any] | None) -> dict[str, Any] | None:
    """The option itself when valid (None stays None), else :class:`StructuredError` saying what is expected."""
    if structured is None:
        return None
    if not isinstance(structured, dict) or len(structured) != 1:
        raise StructuredError(f"structured must be a mapping with exactly one of json_schema, choice, regex; "
                              f"got {structured!r}")
    (kind, value), = structured.items()
    if kind == "json_schema" and isinstance(value, dict):
        return structured
    if kind == "choice" and isinstance(value, list) and value and all(isinstance(c, str) and c for c in value):
        return structured
    if kind == "regex" and isinstance(value, str) and value:
        return structured
    raise StructuredError(f"structured: {kind!r} must be a JSON schema (mapping), a non-empty list of non-empty "
                          f"strings (choice) or a non-empty string (regex); got {value!r}")


def wrapped_schema(structured: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(an object JSON schema for APIs that take only schemas, whether the answer is wrapped in ``value``).

    A JSON schema of an object is sent as is; any other schema, a choice (``enum``) or a regex
    (``pattern``) becomes ``{"value": ...}`` with ``additionalProperties: false``. A regex is anchored,
    ``^(regex)$`` (unless it already starts with ``^`` and ends with ``$``): a JSON schema ``pattern`` matches
    anywhere in the string, the option means the whole answer, and llama.cpp's schema-to-grammar converter
    takes anchored patterns only (it drops the schema otherwise).
    """
    kind, value = next(iter(structured.items()))
    if kind == "json_schema" and value.get("type") == "object":
        return value, False
    inner = value if kind == "json_schema" else \
        {"type": "string", "enum": list(value)} if kind == "choice" else {"type": "string", "pattern": anchored(value)}
    return {"type": "object", "properties": {WRAP_FIELD: inner}, "required": [WRAP_FIELD],
            "additionalProperties": False}, True


def anchored(regex: str) -> str:
    """``regex`` as a JSON schema ``pattern`` that must match the whole string.

    ``^(regex)$``, or the regex itself when it already starts with ``^`` and ends with ``$``.
    """
    return regex if regex.startswith("^") and regex.endswith("$") else f"^({regex})$"


def unwrap(data: Any, wrapped: bool) -> str:
    """The answer text from a schema-constrained object: the ``value`` string when wrapped, else the JSON."""
    if wrapped and isinstance(data, dict) and WRAP_FIELD in data:
        inner = data[WRAP_FIELD]
        return inner if isinstance(inner, str) else json.dumps(inner)
    return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)


def llguidance_grammar(structured: dict[str, Any]) -> str:
    """The llguidance grammar of the option (JSON schema, a Lark alternation of literal strings, or a regex)."""
    import llguidance

    kind, value = next(iter(structured.items()))
    if kind == "json_schema":
        # compact JSON: no free whitespace between tokens, so a small model cannot wander in spaces
        return llguidance.LLMatcher.grammar_from_json_schema(
            value, defaults={"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "})
    if kind == "choice":
        return llguidance.LLMatcher.grammar_from_lark("start: " + " | ".join(json.dumps(c) for c in value))
    return llguidance.LLMatcher.grammar_from_regex(value)
