r"""What every stored generation goes through: configured secrets masked, unstorable text repaired.

A server may put anything in a reply: an API key it echoes back (the ``Authorization`` header as the
answer), or a lone UTF-16 surrogate (``"\ud800"`` is valid JSON, but no UTF-8 file or database can
hold it). :meth:`reasonscope.storage.store.Store.put_completion`, the one place a generation is written, passes
every completion and its request through :func:`scrub_generation` first, so the store, and every output
rebuilt from it (``samples.jsonl``, ``report.html``, the sheets, ``summary.json``), holds

* ``[masked:NAME]`` in place of the value of each configured secret (``NAME`` is the environment
  variable that holds it), in the text, the error and every string of the request;
* U+FFFD in place of each lone surrogate (:func:`reasonscope.text.sanitize.replace_lone_surrogates`);
  NUL and other control characters are valid text and are kept as the model sent them.

What was changed is recorded on the generation, in its request's ``repairs`` (stored in the store's
``generations.request`` JSON)::

    {"masked": ["OPENAI_API_KEY"],
     "lone_surrogates": {"text": {"count": 1, "at": [[4, "U+D800"]]}}}

``at`` lists (position in the stored string, original code point) for the first
:data:`MAX_POSITIONS` replacements of each field, enough to rebuild the original exactly when there are
no more. Error messages built by the providers are masked the same way (:func:`mask_secrets`) before
they are printed or recorded.

Configured secrets are the values of the environment variables that the API providers read their keys
from: ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` and the Hugging Face tokens (``HF_TOKEN``,
``HUGGING_FACE_HUB_TOKEN``) always, and every model's ``api_key_env`` once the
model is created (:func:`register_secret_env`). Values are read when masking, so a key set later is
masked too. A value shorter than :data:`MIN_SECRET_CHARS` characters, or ``EMPTY`` (the placeholder
sent to servers that need no key), is not masked: masking it would rewrite ordinary words in answers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ..text.sanitize import has_lone_surrogates, replace_lone_surrogates
from ..types import Completion, canonical_json

MIN_SECRET_CHARS = 8
MAX_POSITIONS = 100
DEFAULT_SECRET_ENVS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
_secret_envs: set[str] = set(DEFAULT_SECRET_ENVS)


def register_secret_env(*names: str | None) -> None:
    """Mask the values of these environment variables from now on (an API provider's key variables)."""
    _secret_envs.update(n for n in names if n)


def configured_secrets() -> dict[str, str]:
    """``{variable: value}`` of every registered variable that is set to a maskable value.

    Longest value first, so that a key that contains another is masked whole.
    """
    env = os.environ
    found = [(name, value) for name in _secret_envs
             if (value := env.get(name)) and len(value) >= MIN_SECRET_CHARS and value != "EMPTY"]
    found.sort(key=lambda kv: (-len(kv[1]), kv[0]))
    return dict(found)


def mask_secrets(text: str, secrets: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """``text`` with each secret's value replaced by ``[masked:NAME]``, and the names masked."""
    secrets = configured_secrets() if secrets is None else secrets
    masked = []
    for name, value in secrets.items():
        if value in text:
            text = text.replace(value, f"[masked:{name}]")
            masked.append(name)
    return text, masked


class _Repairs:
    """What scrubbing changed, gathered over the fields of one generation."""

    def __init__(self, secrets: dict[str, str]):
        self.secrets = secrets
        self.masked: set[str] = set()
        self.surrogates: dict[str, dict[str, Any]] = {}

    def text(self, value: str, field: str) -> str:
        if self.secrets:
            value, names = mask_secrets(value, self.secrets)
            self.masked.update(names)
        if has_lone_surrogates(value):
            value, replaced = replace_lone_surrogates(value)
            if replaced:
                self.surrogates[field] = {"count": len(replaced),
                                          "at": [[at, f"U+{cp:04X}"] for at, cp in replaced[:MAX_POSITIONS]]}
        return value

    def value(self, obj: Any, field: str) -> Any:
        """Strings (also dictionary keys) anywhere in ``obj``, scrubbed; other values as they are."""
        if isinstance(obj, str):
            return self.text(obj, field)
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                k = self.text(k, field) if isinstance(k, str) else k
                out[k] = self.value(v, f"{field}.{k}")
            return out
        if isinstance(obj, list | tuple):
            return [self.value(v, f"{field}[{i}]") for i, v in enumerate(obj)]
        return obj

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.masked:
            out["masked"] = sorted(self.masked)
        if self.surrogates:
            out["lone_surrogates"] = self.surrogates
        return out


def _needs_scrub(values: Iterable[Any], secrets: dict[str, str]) -> bool:
    for v in values:
        if isinstance(v, str) and (has_lone_surrogates(v) or any(s in v for s in secrets.values())):
            return True
    return False


def scrub_generation(completion: Completion, request: dict[str, Any], request_json: str | None = None
                     ) -> tuple[Completion, dict[str, Any]]:
    """The completion and request to store.

    Secrets masked and lone surrogates replaced in the text, the error, the finish reason and every string of
    the request; what changed is added to the request's ``repairs`` (merged with what an earlier pass
    recorded). Unchanged inputs are returned as they are (the same objects). ``request_json``, the request's
    :func:`~reasonscope.types.canonical_json` when the caller has it, saves serialising it again.
    """
    secrets = configured_secrets()
    fields = {"text": completion.text, "error": completion.error, "finish_reason": completion.finish_reason,
              "constraint": completion.constraint}
    if not _needs_scrub([*fields.values(), canonical_json(request) if request_json is None else request_json],
                        secrets):
        return completion, request
    repairs = _Repairs(secrets)
    clean = {k: repairs.text(v, k) if isinstance(v, str) else v for k, v in fields.items()}
    request = {k: (v if k == "repairs" else repairs.value(v, f"request.{k}")) for k, v in request.items()}
    found = repairs.as_dict()
    if found:
        earlier = dict(request.get("repairs") or {})
        if "masked" in found:
            found["masked"] = sorted(set(found["masked"]) | set(earlier.get("masked", [])))
        request["repairs"] = {**earlier, **found}
    return completion.model_copy(update=clean), request
