"""The information family: REV sign and value, the IRM penalty by hand, the frozen probe
encoder, environments from a known attribution, baselines, and a small end-to-end train + score."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.information.baseline import label_text, rule_baseline
from reasonscope.information.evaluator import Evaluator, load_evaluator
from reasonscope.information.leakage import AntonymSource, LeakageTerm, environments, leakage_term
from reasonscope.information.scoring import score_variants, separations
from reasonscope.information.training import TrainSettings, irm_penalty, train_probe, warmup
from reasonscope.information.variants import baseline_input, rationale_input, variant_texts
from reasonscope.types import Item

runner = CliRunner()


class IgnoresRationale(Evaluator):
    """An evaluator that drops the rationale from its input: it sees exactly what Phi_base sees."""

    def batch(self, inputs, targets):
        return super().batch([baseline_input(x.split(" baseline: ", 1)[1]) for x in inputs], targets)


def test_rev_is_zero_when_the_rationale_is_ignored_and_matches_hand_values(tiny_seq2seq):
    base = load_evaluator(str(tiny_seq2seq))
    ignoring = IgnoresRationale(base.model, base.tokenizer, base.kind, base.source)
    baselines = {"a": "Ana has 3 apples", "b": "The sky is blue"}
    y = {"a": "8", "b": "yes"}
    texts = {"gold": {"a": "3 + 5 = 8", "b": "because so"}, "leaky": {"a": "The answer is 8", "b": "The answer is yes"}}
    per_item, _, rows = score_variants({"rev": ignoring}, base, texts, baselines, y, ["a", "b"])
    assert all(v == pytest.approx(0.0, abs=1e-6) for var in per_item["rev"].values() for v in var.values())
    # with a real Phi (here: the same weights reading r + b), REV = log p(y | r, b) - log p(y | b), per token
    per_item, _, rows = score_variants({"rev": base}, base, texts, baselines, y, ["a"], reduction="sum")
    enc = base.tokenizer([rationale_input("3 + 5 = 8", "Ana has 3 apples"), baseline_input("Ana has 3 apples")],
                         return_tensors="pt", padding=True)
    labels = base.tokenizer(["8"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = base.model(**enc, labels=labels.repeat(2, 1)).logits
    lp = torch.log_softmax(logits, -1).gather(-1, labels.repeat(2, 1)[..., None])[..., 0].sum(-1)
    assert per_item["rev"]["gold"]["a"] == pytest.approx(float(lp[0] - lp[1]), abs=1e-4)
    mean_rows, _, _ = score_variants({"rev": base}, base, texts, baselines, y, ["a"], reduction="mean")
    n_tokens = labels.shape[1]  # "8" and </s>
    assert mean_rows["rev"]["gold"]["a"] == pytest.approx(per_item["rev"]["gold"]["a"] / n_tokens, rel=1e-5, abs=1e-5)
    assert {r["variant"] for r in rows} == {"gold", "leaky"} and rows[0]["label"] == "8"


def test_separations_and_sum():
    per_item = {"gold": {"a": 1.0, "b": 0.5}, "leaky": {"a": 0.2, "b": 0.5}, "gold_leaky": {"a": 0.5, "b": 0.1},
                "vacuous": {"a": 0.0, "b": 0.0}}
    from reasonscope.plan import StatsConfig

    sep = separations(per_item, StatsConfig(n_resamples=200), 0)
    assert sep["gold-leaky"]["value"] == pytest.approx((0.8 + 0.0) / 2)
    assert sep["gold-gold_leaky"]["value"] == pytest.approx((0.5 + 0.4) / 2)
    assert sep["gold-vacuous"]["value"] == pytest.approx(0.75)
    assert sep["SUM"]["value"] == pytest.approx(0.4 + 0.45 + 0.75)


def test_irm_penalty_against_hand_computation():
    torch.manual_seed(0)
    W = torch.randn(3, 4, requires_grad=True)
    xs = [torch.randn(4) for _ in range(3)]
    ys = [0, 2, 1]

    def env_loss(i):
        return lambda w: torch.nn.functional.cross_entropy((w * (W @ xs[i]))[None], torch.tensor([ys[i]]))

    penalty, losses = irm_penalty([env_loss(i) for i in range(3)])
    hand = 0.0
    for x, y in zip(xs, ys, strict=True):
        z = (W @ x).detach()
        p = torch.softmax(z, -1)
        onehot = torch.nn.functional.one_hot(torch.tensor(y), 3).float()
        hand += float(((p - onehot) * z).sum()) ** 2  # dCE(wz, y)/dw at w = 1
    assert float(penalty) == pytest.approx(hand, rel=1e-5)
    assert float(losses[0]) == pytest.approx(float(torch.nn.functional.cross_entropy((W @ xs[0])[None],
                                                                                     torch.tensor([0]))))
    penalty.backward()  # differentiable w.r.t. the model (create_graph)
    assert W.grad is not None and float(W.grad.abs().sum()) > 0
    assert warmup(5.0, 0, 30) == 0 and warmup(5.0, 5, 30) == pytest.approx(2.5) and warmup(5.0, 20, 30) == 5.0


def test_probe_training_leaves_the_encoder_unchanged(tiny_seq2seq, tmp_path):
    phi = load_evaluator(str(tiny_seq2seq))
    enc_before = {k: v.clone() for k, v in phi.model.get_encoder().state_dict().items()}
    dec_before = {k: v.clone() for k, v in phi.model.get_decoder().state_dict().items()}
    inputs = [baseline_input(f"Ana has {i} apples <mask>") for i in range(8)]
    psi = train_probe(phi, inputs, [str(i) for i in range(8)], inputs[:2], ["0", "1"],
                      TrainSettings(epochs=2, lr=1e-2, batch_size=4), tmp_path / "probe")
    enc_after = psi.model.get_encoder().state_dict()
    assert all(torch.equal(enc_before[k], enc_after[k]) for k in enc_before)
    dec_after = psi.model.get_decoder().state_dict()
    assert any(not torch.equal(dec_before[k], dec_after[k]) for k in dec_before if "embed" not in k)
    assert all(torch.equal(v, phi.model.get_encoder().state_dict()[k]) for k, v in enc_before.items())  # Phi untouched
    assert json.loads((tmp_path / "probe" / "state.json").read_text())["finished"]
    causal = Evaluator(None, None, "causal", "x")
    from reasonscope.information.training import freeze_encoder

    with pytest.raises(ValueError, match="needs an encoder-decoder evaluator"):
        freeze_encoder(causal)


def test_environments_from_a_known_attribution():
    text = "The man put carpeting in the bedroom ."
    offsets, attributions, pos = [], [], 0
    scores = {"The": 0.9, "man": 0.1, "put": -0.2, "carpeting": 0.3, "in": 0.5, "the": 0.4, "bedroom": -0.8, ".": 2.0}
    for word in text.split():
        start = text.index(word, pos)
        offsets.append((start, start + len(word)))
        attributions.append(scores[word])
        pos = start + len(word)
    term = leakage_term(text, offsets, attributions, exclude_stop_words=True)
    assert (term.word, term.start, term.end, term.attribution) == ("bedroom", 29, 36, -0.8)  # stop words, "." skipped
    # the thesis's rule (leak_terms: any): every word competes, so "The" (0.9) wins; "." (2.0) is never a word
    thesis = leakage_term(text, offsets, attributions)
    assert (thesis.word, thesis.start, thesis.end, thesis.attribution) == ("The", 0, 3, 0.9)
    llm = AntonymSource(["attic", "garden", "happily"], llm=lambda w, s: "attic")
    envs, prov = environments(text, term, "<mask>", llm, "k")
    assert envs == {"original": text, "mask": "The man put carpeting in the <mask> .",
                    "antonym": "The man put carpeting in the attic ."}
    assert prov == {"leak": "bedroom", "antonym": "attic", "antonym_source": "llm"}
    pool = AntonymSource(["attic", "garden", "happily", "run"], seed=3)
    ant, source = pool("bedroom", text, "k")
    assert ant in ("attic", "garden") and source in ("random NOUN", "wordnet")
    number, source = pool("78", "The answer is 78.", "k")
    assert source == "other number" and number != "78" and number.lstrip("-").isdigit()
    assert leakage_term("the of and", [(0, 3), (4, 6), (7, 10)], [1.0, 1.0, 1.0], exclude_stop_words=True) is None
    assert leakage_term("the of and", [(0, 3), (4, 6), (7, 10)], [1.0, 2.0, 1.0]).word == "of"
    same, prov = environments(text, None, "<mask>", pool, "k")
    assert same["mask"] == text and prov == {"antonym": "no content word"}
    manual = LeakageTerm("bedroom", 29, 36, -0.8)
    assert environments(text, manual, "[MASK]", llm, "k")[0]["mask"].endswith("[MASK] .")


def test_baselines_labels_and_variants():
    nli = Item(id="n", input="Premise: A dog runs.\nHypothesis: An animal moves.", target="entailment",
               answer_type="label", metadata={"premise": "A dog runs.", "hypothesis": "An animal moves."})
    assert rule_baseline(nli) == "A dog runs, which implies that an animal moves."
    assert rule_baseline(nli, "phrase") == "A dog runs, which means that an animal moves."
    contra = nli.model_copy(update={"target": "contradiction"})
    assert rule_baseline(contra) == "A dog runs, which contradicts that an animal moves."
    assert rule_baseline(contra, "phrase") == "A dog runs, which means it is not true that an animal moves."
    neutral = nli.model_copy(update={"target": "neutral"})
    assert rule_baseline(neutral) == "A dog runs, which allows that an animal moves."
    assert rule_baseline(neutral, "phrase") == "A dog runs, which does not tell whether an animal moves."
    yn = Item(id="y", input="All oaks are trees. Is a bur oak a tree?", target=True, answer_type="boolean")
    assert rule_baseline(yn) == "All oaks are trees. A bur oak is a tree."
    qa = Item(id="q", input="Ana has 3 apples and gets 5 more. How many apples does Ana have?", target=8.0,
              answer_type="number")
    assert rule_baseline(qa) == "Ana has 3 apples and gets 5 more. Ana has 8 apples."
    mc = Item(id="c", input="What is 2 + 2?", target="B", choices=["3", "4"], answer_type="choice")
    assert label_text(mc) == "4" and rule_baseline(mc) == "2 + 2 is 4."
    v = variant_texts("3 + 5 = 8.", "8", "b")
    assert v == {"gold": "3 + 5 = 8.", "leaky": "The answer is 8.", "gold_leaky": "3 + 5 = 8. The answer is 8.",
                 "vacuous": "b"}


def test_causal_evaluator_log_likelihood(tiny_causal_lm):
    ev = load_evaluator(str(tiny_causal_lm))
    assert ev.kind == "causal"
    b = ev.batch(["Ana has 3 apples"], ["8"])
    n_target = int((b["labels"] != -100).sum())
    total = ev.log_likelihood(["Ana has 3 apples"], ["8"], reduction="sum")[0]
    mean = ev.log_likelihood(["Ana has 3 apples"], ["8"], reduction="mean")[0]
    assert total < 0 and mean == pytest.approx(total / n_target, rel=1e-5)


def test_end_to_end_train_score_resume_and_cli(tiny_seq2seq, tmp_path, monkeypatch):
    import reasonscope.information.training as training

    started_from = []
    real_train_larev = training.train_larev

    def recording_train_larev(source, *args, **kwargs):
        started_from.append(source)
        return real_train_larev(source, *args, **kwargs)

    monkeypatch.setattr(training, "train_larev", recording_train_larev)
    res = runner.invoke(app, ["information", "train", "--train", "synthetic", "--test", "synthetic", "--size", "4",
                              "--evaluator", str(tiny_seq2seq), "--epochs", "2", "--probe-epochs", "1",
                              "--larev-epochs", "1", "--lr", "0.001", "--output-dir", str(tmp_path), "--name", "info"])
    assert res.exit_code == 0, res.output
    run_dir = tmp_path / "info"
    t = json.loads((run_dir / "summary.json").read_text())["information"]
    assert t["methods"] == ["rev", "larev"] and t["n_train"] + t["n_val"] == 12 and t["n_test"] == 3
    for m in ("rev", "larev"):
        assert set(t["absolute"][m]) == {"gold", "leaky", "gold_leaky", "vacuous"}
        assert set(t["separation"][m]) == {"gold-leaky", "gold-gold_leaky", "gold-vacuous", "SUM"}
        assert all(0 <= a <= 1 for a in t["accuracy"][m].values())
    tr = t["training"]
    assert tr["phi_base"]["epochs"] == 2 and tr["phi"]["best_epoch"] in (1, 2) and tr["phi_la"]["epochs"] == 1
    assert sum(tr["antonym_sources"].values()) == 12 and len(t["environments"]) == 12
    (phi_best,) = (run_dir / "information").glob("phi-*/best")
    assert started_from == [str(phi_best)]  # larev_init: phi (the default) starts Phi_LA from the trained Phi
    env = t["environments"][0]
    assert env["env_mask"].count("<mask>") == 1 and env["leak"] in env["baseline"]
    for name in ("phi_base", "phi", "probe", "phi_la"):
        (folder,) = (run_dir / "information").glob(f"{name}-*")
        assert (folder / "best" / "evaluator.json").is_file() and list((folder / "best").glob("*.safetensors")), name
        assert not (folder / "checkpoint").exists()  # removed once finished
    assert (run_dir / "information_scores.png").is_file() and "REV, LAREV" in (run_dir / "report.html").read_text()
    # score new items with the trained evaluators: nothing is trained again
    (phi_folder,) = (run_dir / "information").glob("phi-*")
    before = (phi_folder / "state.json").read_text()
    res = runner.invoke(app, ["information", "score", str(run_dir), "--test", "synthetic", "--size", "2",
                              "--generator", "mock/reasoner"])
    assert res.exit_code == 0, res.output
    assert (phi_folder / "state.json").read_text() == before
    t2 = json.loads((run_dir / "summary.json").read_text())["information"]
    assert t2["n_test"] == 6 and "generated:mock/reasoner" in t2["absolute"]["rev"]
    assert t2["training"]["phi"]["resumed_from_epoch"] == 2
    assert len(list((run_dir / "information").glob("phi-*"))) == 1  # the same models, not new ones
    # train and test items share ids (arith-0, ...): each split keeps its own baselines and labels
    assert all(e["item"].startswith("train:") for e in t2["environments"])
    assert {x["item"] for x in t2["examples"]} <= {f"test:{k}-{i}" for k in ("arith", "logic", "mc") for i in range(2)}
    res = runner.invoke(app, ["information", "score", str(tmp_path / "none"), "--test", "synthetic"])
    assert res.exit_code == 2 and "no config.yaml" in res.output


def test_training_resumes_after_a_crash(tiny_seq2seq, tmp_path, monkeypatch):
    import reasonscope.information.training as training
    from reasonscope.information.training import train_erm

    monkeypatch.setattr(training, "CHECKPOINT_MIN_S", 0.0)  # a checkpoint after each epoch of milliseconds

    inputs = [baseline_input(f"Ana has {i} apples") for i in range(6)]
    targets = [str(i) for i in range(6)]
    settings = TrainSettings(epochs=3, lr=1e-3, batch_size=3)
    calls = {"n": 0}
    real = training._val_loss

    def crash_on_second_epoch(*a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    training._val_loss = crash_on_second_epoch
    try:
        with pytest.raises(KeyboardInterrupt):
            train_erm(load_evaluator(str(tiny_seq2seq)), inputs, targets, inputs[:2], targets[:2], settings,
                      tmp_path / "m", label="m")
    finally:
        training._val_loss = real
    state = json.loads((tmp_path / "m" / "state.json").read_text())
    assert state["epochs_run"] == 1 and not state["finished"] and (tmp_path / "m" / "checkpoint").is_dir()
    res = train_erm(load_evaluator(str(tiny_seq2seq)), inputs, targets, inputs[:2], targets[:2], settings,
                    tmp_path / "m", label="m")
    assert res.resumed_from == 1 and [h["epoch"] for h in res.history] == [1, 2, 3]
    assert json.loads((tmp_path / "m" / "state.json").read_text())["finished"]
    again = train_erm(load_evaluator(str(tiny_seq2seq)), inputs, targets, inputs[:2], targets[:2], settings,
                      tmp_path / "m", label="m")
    assert again.resumed_from == 3 and again.best_val == res.best_val  # finished: loaded, not retrained


def test_model_folders_follow_the_settings_and_collapse_is_reported():
    from pathlib import Path
    from types import SimpleNamespace

    from reasonscope.information.scoring import collapse_warning, model_folders
    from reasonscope.plan import InformationConfig

    cfg = InformationConfig(train={"name": "t", "format": "synthetic"}, evaluator="t5-small")
    tr = [Item(id="a", input="q", target=1, rationale="r")]
    va = [Item(id="b", input="q2", target=2, rationale="r2")]
    b = {"a": "ba", "b": "bb"}
    one = model_folders(Path("root"), cfg, tr, va, b, 0)
    other = model_folders(Path("root"), cfg.model_copy(update={"lambda_irm": 0.5}), tr, va, b, 0)
    assert one["phi"] == other["phi"] and one["probe"] == other["probe"] and one["phi_la"] != other["phi_la"]
    assert model_folders(Path("root"), cfg, tr, va, {"a": "changed", "b": "bb"}, 0)["phi"] != one["phi"]
    assert one["phi"].name.startswith("phi-") and one["phi"].parent == Path("root")
    fake = SimpleNamespace(tokenizer=[0] * 30522)  # log V = 10.33
    assert "Phi_LA collapsed" in collapse_warning(fake, 9.1, 1.5)
    assert collapse_warning(fake, 2.9, 2.6) is None


def test_llm_antonyms_are_asked_once_through_the_store(tmp_path):
    from rich.console import Console

    from reasonscope.information.scoring import _llm_antonyms
    from reasonscope.plan import InformationConfig
    from reasonscope.storage.store import Store

    cfg = InformationConfig(train={"name": "t", "format": "synthetic"},
                            antonym_model={"spec": "mock/scripted", "options": {"responses": ["attic."]}})
    store = Store(tmp_path)
    asked = [("bedroom", "He slept in the bedroom."), ("hot", "The tea is hot.")]
    lookup, error = _llm_antonyms(cfg, asked, store, 0, Console(stderr=True))
    assert error is None
    assert lookup("bedroom", "He slept in the bedroom.") == "attic" and lookup("cold", "x") is None
    n = store.conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    assert n == 2
    _llm_antonyms(cfg, asked, store, 0, Console(stderr=True))
    assert store.conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0] == n  # cached, not asked again
    assert _llm_antonyms(cfg.model_copy(update={"antonym_model": None}), asked, store, 0, Console()) == (None, None)


def test_an_antonym_model_that_cannot_be_used_is_named_with_the_reason(tmp_path, monkeypatch):
    import io

    from rich.console import Console

    from reasonscope.information.scoring import _llm_antonyms, antonym_notes
    from reasonscope.plan import InformationConfig
    from reasonscope.storage.store import Store

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = InformationConfig(train={"name": "t", "format": "synthetic"}, antonym_model={"spec": "openai/gpt-4o-mini"})
    out = io.StringIO()
    lookup, error = _llm_antonyms(cfg, [("hot", "The tea is hot.")], Store(tmp_path), 0,
                                  Console(file=out, width=200))
    assert lookup is None and error.startswith("antonym_model openai/gpt-4o-mini cannot be used (")
    assert "OPENAI_API_KEY" in error and "antonym_model openai/gpt-4o-mini cannot be used" in out.getvalue()
    notes = antonym_notes({"random ADJ": 2}, antonym_model_error=error, wordnet="nltk is not installed")
    assert notes[0] == f"{error}: no antonym came from it"
    assert "(" + error + "; WordNet is unavailable: nltk is not installed)" in notes[1]
