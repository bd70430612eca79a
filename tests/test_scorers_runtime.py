"""One ``runtime`` setting, one resolver: each input combination gives its runtime, decided once per scorer.

The ONNX path itself (conversions, their check, ONNX Runtime scores) is tested in ``test_scorers_onnx.py``
where the onnx extra is installed; here what is installed and whether a conversion passes are stood in for,
so every branch of :func:`reasonscope.scorers.runtime_choice.resolve_runtime` runs on every install.
"""

from __future__ import annotations

import pytest

from reasonscope.scorers import nli as nli_module
from reasonscope.scorers import onnx_export, runtime_choice
from reasonscope.scorers import similarity as similarity_module
from reasonscope.scorers.onnx_export import ConversionError
from reasonscope.scorers.runtime_choice import RUNTIME_HELP, RuntimeChoice, resolve_runtime
from reasonscope.scorers.settings import NLIConfig, SimilarityConfig

NLI_MODEL = "cross-encoder/nli-deberta-v3-small"
MISSING = ("the onnx extra is not installed (onnxruntime, tokenizers, onnx, onnxscript missing; "
           "pip install 'reasonscope[onnx]')")


@pytest.fixture
def world(monkeypatch):
    """What is installed and what a conversion does, set per test; records conversions and choices."""

    class World:
        installed = True
        converts = True
        conversions: list[tuple] = []
        choices = 0

    w = World()
    w.conversions = []
    monkeypatch.setattr(runtime_choice, "AUTO_ORDER", ("onnx", "torch"))
    monkeypatch.setattr(runtime_choice, "find_spec", lambda name: object() if w.installed else None)
    monkeypatch.setattr(runtime_choice, "_told", set())

    def converted(model, task, num_layers=None):
        w.conversions.append((model, task, num_layers))
        if not w.converts:
            raise ConversionError(f"{model}: the ONNX conversion differs from torch by 2.00e-01")
        return object()

    monkeypatch.setattr(onnx_export, "converted", converted)
    real = runtime_choice.choose_runtime

    def counting(*args, **kwargs):
        w.choices += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(runtime_choice, "choose_runtime", counting)
    return w


CASES = [
    # (settings, AUTO_ORDER, extra installed, conversion passes) -> (runtime, reason, conversions)
    ("explicit torch, everything installed", NLIConfig(runtime="torch"), True, True, ("torch", None, [])),
    ("explicit onnx is taken as it is (no check here)", NLIConfig(runtime="onnx"), True, False, ("onnx", None, [])),
    ("explicit onnx, extra missing", SimilarityConfig(runtime="onnx"), False, True, ("onnx", None, [])),
    ("auto, cross-encoder converts", NLIConfig(), True, True, ("onnx", None, [(NLI_MODEL, "nli", None)])),
    ("auto, conversion fails its check", NLIConfig(), True, False,
     ("torch", f"no verified ONNX conversion (ConversionError: {NLI_MODEL}: the ONNX conversion differs from torch "
      "by 2.00e-01)", [(NLI_MODEL, "nli", None)])),
    ("auto, extra missing", NLIConfig(), False, True, ("torch", MISSING, [])),
    ("auto, LLM judge: nothing to convert", NLIConfig(backend="llm", model="smollm2"), True, True, ("torch", None, [])),
    ("auto, embedding cosine: nothing to convert", SimilarityConfig(method="embedding"), True, True,
     ("torch", None, [])),
    ("auto, BERTScore encoder by path and layers", SimilarityConfig(model="/models/enc", num_layers=4), True, True,
     ("onnx", None, [("/models/enc", "hidden-states", 4)])),
    ("auto, BERTScore, extra missing", SimilarityConfig(model="/models/enc"), False, True, ("torch", MISSING, [])),
]


@pytest.mark.parametrize(("cfg", "installed", "converts", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_combination_gives_its_runtime(world, cfg, installed, converts, want):
    world.installed, world.converts = installed, converts
    resolved, choice = resolve_runtime(cfg)
    runtime, reason, conversions = want
    assert choice == RuntimeChoice(runtime, reason)
    assert resolved.runtime == runtime
    assert resolved.model_dump(exclude={"runtime"}) == cfg.model_dump(exclude={"runtime"})
    assert world.conversions == conversions
    assert world.choices == (1 if cfg.runtime == "auto" else 0)  # an explicit runtime needs no look


def test_the_tests_default_auto_is_torch_without_a_look(monkeypatch):
    """conftest sets AUTO_ORDER to ("torch",): auto is torch, no conversion attempted, no reason given."""
    monkeypatch.setattr(onnx_export, "converted", lambda *a, **k: pytest.fail("no conversion expected"))
    assert resolve_runtime(NLIConfig())[1] == RuntimeChoice("torch")


def test_resolving_resolved_settings_changes_nothing(world):
    resolved, _ = resolve_runtime(NLIConfig())
    again, choice = resolve_runtime(resolved)
    assert again is resolved and choice == RuntimeChoice("onnx")
    assert world.choices == 1 and len(world.conversions) == 1


def test_runtime_identity_libraries_and_suffix():
    assert RuntimeChoice("torch").identity() == {}
    onnx = RuntimeChoice("onnx").identity()
    assert onnx["runtime"] == "onnx" and onnx["conversion"] == onnx_export.CONVERSION_VERSION
    assert set(onnx) == {"runtime", "onnxruntime", "conversion"}
    assert RuntimeChoice("onnx").libraries == ("onnxruntime", "tokenizers")
    assert RuntimeChoice("torch", "why").libraries == ("torch", "transformers")
    assert RuntimeChoice("onnx").suffix == ":onnx"
    assert RuntimeChoice("torch", "the extra is missing").suffix == " [torch: the extra is missing]"
    assert RuntimeChoice("torch").suffix == ""


class _Loaded:
    """Stands in for a loaded scorer: records the settings it was built from."""

    built: list = []

    def __init__(self, *args, **kwargs):
        _Loaded.built.append(args)
        self.description = "stand-in"


def test_a_cached_nli_resolves_once_and_loads_from_the_resolved_settings(world, monkeypatch):
    monkeypatch.setattr(_Loaded, "built", [])
    monkeypatch.setattr(nli_module, "HFCrossEncoderNLI", _Loaded)
    world.converts = False  # auto falls back to torch: the loader must not look again
    scorer, reason = nli_module.cached_nli(NLIConfig())
    assert reason is None and scorer.config.runtime == "torch"
    assert scorer.description.startswith(f"hf-cross-encoder:{NLI_MODEL} [torch: no verified ONNX conversion")
    assert scorer.libraries == ("torch", "transformers")
    scorer.scorer()  # the first cache miss loads it
    assert _Loaded.built == [(NLI_MODEL, 16)]
    assert world.choices == 1 and len(world.conversions) == 1


def test_a_cached_similarity_resolves_once_and_loads_from_the_resolved_settings(world, monkeypatch):
    monkeypatch.setattr(_Loaded, "built", [])
    monkeypatch.setattr(similarity_module, "BERTScoreF1", _Loaded)
    world.installed = False
    sim = similarity_module.cached_similarity(SimilarityConfig(model="/models/enc"))
    assert sim.config.runtime == "torch" and sim.description.endswith(f"[torch: {MISSING}]")
    assert sim.identity["settings"]["matching"] == "real-tokens"
    sim.scorer()
    assert _Loaded.built == [("/models/enc", 6, 8)]
    assert world.choices == 1


def test_ray_actors_get_the_resolved_settings(world, monkeypatch):
    """--executor ray: the actors rebuild the scorers from the settings as resolved in the driver (no auto)."""
    monkeypatch.setattr(_Loaded, "built", [])
    from reasonscope.behavior.entry import prepare_scoring_models
    from reasonscope.behavior.settings import BehaviorConfig
    from reasonscope.execution import executors

    sent: list[dict] = []

    class Pool:
        def __init__(self, settings, workers=2):
            sent.append(settings)

    monkeypatch.setattr(executors, "RayPool", Pool)
    behavior = BehaviorConfig(nli={"model": "/models/nli"}, similarity={"model": "/models/enc"})
    models = executors.distribute(prepare_scoring_models(behavior), behavior, "ray")
    models.nli.scorer()
    assert sent[0]["nli"]["runtime"] == "onnx" and sent[0]["similarity"]["runtime"] == "onnx"
    assert sent[0]["nli"]["model"] == "/models/nli"
    assert world.choices == 2  # one per scorer, none in the actors
    from reasonscope.scorers import onnx_scorers  # imports no onnxruntime until a scorer is built

    monkeypatch.setattr(onnx_scorers, "OnnxCrossEncoderNLI", _Loaded)
    executors._make_scorer("nli", sent[0]["nli"])  # what an actor runs: resolved settings, no second look
    assert _Loaded.built[-1] == ("/models/nli", 16)
    assert world.choices == 2


def test_one_runtime_field_for_every_scorer():
    for model in (NLIConfig, SimilarityConfig):
        field = model.model_fields["runtime"]
        assert field.default == "auto" and field.description == RUNTIME_HELP
        assert list(model.model_fields)[-1] == "runtime"  # declared last: the plan's key order is unchanged


@pytest.mark.parametrize(("cfg", "message"), [
    (dict(model=NLIConfig, backend="llm", model_spec="smollm2"),
     "nli.runtime: onnx is available for backend: hf only (backend: llm has no model of its own to convert)"),
    (dict(model=SimilarityConfig, method="embedding"),
     "similarity.runtime: onnx is available for method: bertscore only (embedding runs on torch through "
     "sentence-transformers)"),
])
def test_onnx_where_there_is_nothing_to_convert_is_refused(cfg, message):
    import re

    from pydantic import ValidationError

    cls = cfg.pop("model")
    if "model_spec" in cfg:
        cfg["model"] = cfg.pop("model_spec")
    with pytest.raises(ValidationError, match=re.escape(message)):
        cls(runtime="onnx", **cfg)
