"""Which runtime a scoring model runs on when its settings say ``runtime: auto`` (the default).

``auto`` takes the fastest verified path that is installed:

1. **onnx** when the ``onnx`` extra is installed (ONNX Runtime, ``tokenizers``, and for the one-time
   conversion ``onnx`` and ``onnxscript``), the scorer has a model of its own to convert (the NLI
   cross-encoder of ``backend: hf``, the encoder of ``method: bertscore``) and its conversion exists or can
   be made now and passes the check against torch (:func:`reasonscope.scorers.onnx_export.converted`:
   made once per model, with a line on stderr, then read from the user cache);
2. **torch** otherwise, with the reason (the extra is missing, or the conversion failed and why), which
   is logged once and shown in the scorer's description, so a torch run is never silent about it.

On the peer benchmark (``benchmarks/behavior_vs_peer.py``) onnx runs the behaviour family about twice as
fast as torch, mostly by not importing torch and transformers at all; the scores of the two runtimes
agree within the conversion's checked tolerance, and the score cache keeps them apart (a runtime is part
of a scorer's identity). An explicit ``torch`` or ``onnx`` is taken as it is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Literal

log = logging.getLogger(__name__)

ONNX_MODULES = ("onnxruntime", "tokenizers", "onnx", "onnxscript")
"""What ``runtime: onnx`` needs: ONNX Runtime and tokenizers to score, onnx and onnxscript to convert."""

AUTO_ORDER: tuple[str, ...] = ("onnx", "torch")
"""The runtimes ``auto`` tries, in order (the test suite sets ``("torch",)``, so that its known values are
the torch runtime's on every install; the tests of ``auto`` itself set it back)."""

_told: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class RuntimeChoice:
    """The runtime a scorer runs on and, when ``auto`` fell back to torch, why."""

    runtime: Literal["torch", "onnx"]
    reason: str | None = None


def runtime_suffix(runtime: str, fallback: str | None) -> str:
    """What a scorer's description adds for its runtime: ``:onnx``, or why ``auto`` fell back to torch."""
    if runtime == "onnx":
        return ":onnx"
    return f" [torch: {fallback}]" if fallback else ""


def runtime_libraries(runtime: str) -> tuple[str, ...]:
    """The modules a scorer on ``runtime`` imports when it loads.

    ONNX Runtime and tokenizers on onnx, torch and transformers otherwise.
    """
    return ("onnxruntime", "tokenizers") if runtime == "onnx" else ("torch", "transformers")


def missing_onnx_modules() -> list[str]:
    """The modules of the ``onnx`` extra that are not installed (empty when it is complete)."""
    return [name for name in ONNX_MODULES if find_spec(name) is None]


def choose_runtime(requested: str, *, model: str, task: Literal["nli", "hidden-states"],
                   num_layers: int | None = None, convertible: bool = True) -> RuntimeChoice:
    """The runtime of a scorer whose settings ask for ``requested`` (``auto``, ``torch`` or ``onnx``).

    ``convertible`` says whether the scorer has a model ONNX can run (False for an LLM judge or embedding
    cosine: ``auto`` is torch for them, without a warning). For ``auto`` and a convertible model this
    makes the conversion when it does not exist yet.
    """
    if requested in ("torch", "onnx"):
        return RuntimeChoice(requested)  # type: ignore[arg-type]
    if not convertible or AUTO_ORDER[0] != "onnx":
        return RuntimeChoice("torch")
    missing = missing_onnx_modules()
    if missing:
        return _fallback(model, f"the onnx extra is not installed ({', '.join(missing)} missing; "
                         "pip install 'reasonscope[onnx]')")
    from .onnx_export import converted

    try:
        converted(model, task, num_layers)
    except Exception as err:  # a failed check, an exporter error, a model that cannot be loaded
        return _fallback(model, f"no verified ONNX conversion ({type(err).__name__}: {err})")
    return RuntimeChoice("onnx")


def _fallback(model: str, reason: str) -> RuntimeChoice:
    if (model, reason) not in _told:
        _told.add((model, reason))
        log.warning("runtime auto for %s: torch, because %s", model, reason)
    return RuntimeChoice("torch", reason)
