"""Which runtime a scoring model runs on: the ``runtime`` setting, its one resolver, and what it implies.

The NLI cross-encoder (``families.behavior.nli`` and ``families.attributes.automatic.nli``) and the
BERTScore encoder (``families.behavior.similarity``) share one setting, ``runtime``
(:func:`runtime_field`): ``torch``, ``onnx`` or ``auto`` (the default). :func:`resolve_runtime` turns it
into the runtime the scorer runs on, once per scorer and run: the scorer behind the score cache
(:func:`reasonscope.scorers.nli.cached_nli`, :func:`reasonscope.scorers.similarity.cached_similarity`)
resolves it and hands the resolved settings on to the loader and, with ``--executor ray``, to the actors,
which take an explicit runtime as it is.

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
of a scorer's identity: :meth:`RuntimeChoice.identity`). An explicit ``torch`` or ``onnx`` is taken as it
is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any, Literal, Protocol, TypeVar

from pydantic import Field

log = logging.getLogger(__name__)

__all__ = ["AUTO_ORDER", "ONNX_MODULES", "OnnxTarget", "Runtime", "RuntimeChoice", "choose_runtime",
           "missing_onnx_modules", "resolve_runtime", "runtime_field", "runtime_libraries", "runtime_suffix"]

Runtime = Literal["auto", "torch", "onnx"]
"""The values of the ``runtime`` setting."""

RUNTIME_HELP = ("Where the scoring model runs: torch = transformers on torch; onnx = ONNX Runtime on a verified "
                "conversion of the model (made once and cached; no torch import at scoring time; needs the onnx "
                "extra); auto = onnx when the onnx extra is installed and the conversion passes its check, else "
                "torch with the reason. Only a scorer with a model of its own is converted (the NLI backend hf, "
                "the similarity method bertscore); the others run on torch.")
"""The description of the ``runtime`` setting, written once for every scorer that has it."""

ONNX_MODULES = ("onnxruntime", "tokenizers", "onnx", "onnxscript")
"""What ``runtime: onnx`` needs: ONNX Runtime and tokenizers to score, onnx and onnxscript to convert."""

AUTO_ORDER: tuple[str, ...] = ("onnx", "torch")
"""The runtimes ``auto`` tries, in order (the test suite sets ``("torch",)``, so that its known values are
the torch runtime's on every install; the tests of ``auto`` itself set it back)."""

_told: set[tuple[str, str]] = set()


def runtime_field() -> Any:
    """The ``runtime`` field of a scorer's settings (default ``auto``), declared here once for all of them."""
    return Field("auto", description=RUNTIME_HELP)


@dataclass(frozen=True)
class OnnxTarget:
    """What an ONNX conversion of a scorer converts: the model (an HF id or a local path), its task, its layers."""

    model: str
    task: Literal["nli", "hidden-states"]
    num_layers: int | None = None


class RuntimeSettings(Protocol):
    """Settings that carry a ``runtime`` (:class:`reasonscope.scorers.settings.NLIConfig`, ``SimilarityConfig``)."""

    runtime: str

    def onnx_target(self) -> OnnxTarget | None:
        """What a conversion converts; None when the scorer has no model ONNX can run."""

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy with ``update`` applied (pydantic)."""


S = TypeVar("S", bound=RuntimeSettings)


@dataclass(frozen=True)
class RuntimeChoice:
    """The runtime a scorer runs on and, when ``auto`` fell back to torch, why."""

    runtime: Literal["torch", "onnx"]
    reason: str | None = None

    @property
    def suffix(self) -> str:
        """What the scorer's description adds: ``:onnx``, or why ``auto`` fell back to torch."""
        return runtime_suffix(self.runtime, self.reason)

    @property
    def libraries(self) -> tuple[str, ...]:
        """The modules the scorer imports when it loads (:func:`runtime_libraries`)."""
        return runtime_libraries(self.runtime)

    def identity(self) -> dict[str, Any]:
        """What the runtime adds to a scorer's identity in the score cache.

        Nothing for torch (its libraries are in every identity); for onnx the runtime, ONNX Runtime's version
        and the conversion's version.
        """
        if self.runtime != "onnx":
            return {}
        from ..storage.versions import installed_versions
        from .onnx_export import CONVERSION_VERSION

        return {"runtime": "onnx", "onnxruntime": installed_versions(["onnxruntime"])["onnxruntime"],
                "conversion": CONVERSION_VERSION}


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


def resolve_runtime(cfg: S) -> tuple[S, RuntimeChoice]:
    """``cfg`` with its runtime decided, and the choice (with the reason when ``auto`` fell back to torch).

    The one resolver of every scorer's ``runtime``. An explicit ``torch`` or ``onnx`` is returned as it is,
    without looking at what is installed, so resolving settings that are resolved already costs nothing;
    ``auto`` is decided by :func:`choose_runtime` on the scorer's :class:`OnnxTarget` (making the conversion
    when it does not exist yet).
    """
    if cfg.runtime in ("torch", "onnx"):
        return cfg, RuntimeChoice(cfg.runtime)  # type: ignore[arg-type]
    target = cfg.onnx_target()
    if target is None:
        choice = choose_runtime(cfg.runtime, model="", task="nli", convertible=False)
    else:
        choice = choose_runtime(cfg.runtime, model=target.model, task=target.task, num_layers=target.num_layers)
    return cfg.model_copy(update={"runtime": choice.runtime}), choice


def choose_runtime(requested: str, *, model: str, task: Literal["nli", "hidden-states"],
                   num_layers: int | None = None, convertible: bool = True) -> RuntimeChoice:
    """The runtime of a scorer whose settings ask for ``requested`` (``auto``, ``torch`` or ``onnx``).

    ``convertible`` says whether the scorer has a model ONNX can run (False for an LLM judge or embedding
    cosine: ``auto`` is torch for them, without a warning). For ``auto`` and a convertible model this
    makes the conversion when it does not exist yet. Settings go through :func:`resolve_runtime`.
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
