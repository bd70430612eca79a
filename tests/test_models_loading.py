"""Model loading is serialised: two threads loading models over and over never see each other's
half-applied transformers state (the "Cannot copy out of meta tensor" crash of the demo)."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from reasonscope.models.registry import create_model  # noqa: E402
from reasonscope.scorers.nli import HFCrossEncoderNLI  # noqa: E402
from reasonscope.scorers.similarity import EmbeddingCosine  # noqa: E402
from reasonscope.testing import build_tiny_causal_lm  # noqa: E402

ROUNDS = 15


@pytest.fixture(scope="module")
def tied_lm(tmp_path_factory):
    """Tied input/output embeddings, as in SmolLM2: the model that broke."""
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-tied"), tied=True)


def test_two_threads_load_models_many_times(tied_lm, tiny_nli):
    errors: list[str] = []
    tied: list[bool] = []

    def causal():
        for _ in range(ROUNDS):
            try:
                m = create_model(f"hf/{tied_lm}")
                m.load()
                tied.append(m.model.lm_head.weight.data_ptr() == m.model.model.embed_tokens.weight.data_ptr())
                m.close()
            except Exception as err:  # collected: a thread's exception would otherwise vanish
                errors.append(f"causal: {type(err).__name__}: {err}")

    def scorers():
        for i in range(ROUNDS):
            try:
                if i % 2:
                    assert 0 <= HFCrossEncoderNLI(str(tiny_nli)).contradiction([("a b", "c")])[0] <= 1
                else:
                    EmbeddingCosine(str(tiny_nli), pooling="mean").pairwise(["a b"], ["a c"])
            except Exception as err:
                errors.append(f"scorer: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=causal), threading.Thread(target=scorers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert tied == [True] * ROUNDS  # the output layer shares the embeddings every time


LOADERS = {"from_pretrained", "from_config", "from_encoder_decoder_pretrained", "BERTScorer", "SentenceTransformer"}


def test_every_load_in_the_package_holds_the_loading_lock():
    root = Path(__file__).resolve().parents[1] / "src" / "reasonscope"
    unguarded = []
    for path in root.rglob("*.py"):
        if path.name == "testing.py":  # builds the tiny test models; not a load
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.With) and any(
                    isinstance(i.context_expr, ast.Call) and getattr(i.context_expr.func, "id", "") == "model_loading"
                    for i in node.items):
                guarded.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name in LOADERS and id(node) not in guarded:
                    unguarded.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    assert unguarded == []
