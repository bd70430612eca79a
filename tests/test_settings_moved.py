"""Settings that moved to one home keep their old import paths for one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from reasonscope.scorers import settings as scorer_settings


@pytest.mark.parametrize("name", ["NLIConfig", "SimilarityConfig"])
def test_scorer_settings_from_the_shared_settings(name):
    shared = importlib.import_module("reasonscope.shared_settings")
    with pytest.warns(DeprecationWarning, match=rf"reasonscope\.shared_settings\.{name} moved to "
                      rf"reasonscope\.scorers\.settings\.{name}; the old path works until the next release"):
        old = getattr(shared, name)
    assert old is getattr(scorer_settings, name)


def test_scorer_settings_from_the_settings_module_before_the_rename():
    sys.modules.pop("reasonscope.settings", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from reasonscope.settings import NLIConfig
    assert NLIConfig is scorer_settings.NLIConfig
    assert [str(w.message).split(";")[0] for w in caught] == [
        "reasonscope.settings moved to reasonscope.shared_settings",
        "reasonscope.shared_settings.NLIConfig moved to reasonscope.scorers.settings.NLIConfig"]


def test_the_plan_still_names_them_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        from reasonscope.plan import NLIConfig, SimilarityConfig
    assert (NLIConfig, SimilarityConfig) == (scorer_settings.NLIConfig, scorer_settings.SimilarityConfig)


def test_an_unknown_name_is_still_an_attribute_error():
    import reasonscope.shared_settings as shared

    with pytest.raises(AttributeError, match="module 'reasonscope.shared_settings' has no attribute 'NoSuch'"):
        shared.NoSuch  # noqa: B018
    from reasonscope.scorers import onnx_export

    with pytest.raises(AttributeError, match="has no attribute 'no_such'"):
        onnx_export.no_such  # noqa: B018


def test_the_two_resolvers_before_the_one():
    from reasonscope.scorers.nli import resolve_nli
    from reasonscope.scorers.similarity import resolve_similarity

    with pytest.warns(DeprecationWarning, match="resolve_nli is replaced by reasonscope.scorers.runtime_choice."
                      "resolve_runtime"):
        cfg, reason = resolve_nli(scorer_settings.NLIConfig())
    assert (cfg.runtime, reason) == ("torch", None)  # the tests' auto is torch (conftest)
    with pytest.warns(DeprecationWarning, match="resolve_similarity is replaced"):
        cfg, reason = resolve_similarity(scorer_settings.SimilarityConfig(runtime="onnx"))
    assert (cfg.runtime, reason) == ("onnx", None)


def test_runtime_settings_before_the_runtime_choice_identity():
    from reasonscope.scorers import onnx_export
    from reasonscope.scorers.runtime_choice import RuntimeChoice

    with pytest.warns(DeprecationWarning, match=r"runtime_settings\(runtime\) is replaced by reasonscope\.scorers\."
                      r"runtime_choice\.RuntimeChoice\(runtime\)\.identity\(\)"):
        runtime_settings = onnx_export.runtime_settings
    assert runtime_settings("torch") == {} and runtime_settings("auto") == {}
    assert runtime_settings("onnx") == RuntimeChoice("onnx").identity()


def test_the_penalty_table_is_written_once():
    from reasonscope.information import defaults, settings

    assert defaults.DATASET_PENALTIES is settings.DATASET_PENALTIES
    assert defaults.EVALUATOR_PENALTIES["embedded-minilm-ed"]["esnli"][1] == settings.DATASET_PENALTIES["esnli"][1]
    irm = settings.InformationConfig.model_fields["lambda_irm"].description
    assert "e-SNLI/NLI items 25, ECQA and others 5," in irm
    probe = settings.InformationConfig.model_fields["lambda_probe"].description
    assert "e-SNLI/NLI items 0.005, ECQA and others 0.0005" in probe
