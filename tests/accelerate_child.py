"""Trains the information family's four evaluators on a tiny model; run alone or under ``accelerate launch``.

Used by ``tests/test_cluster_accelerate.py``: ``python tests/accelerate_child.py MODEL OUT --batch 4`` and
``accelerate launch --multi_gpu --num_processes 2 tests/accelerate_child.py MODEL OUT --batch 2`` train Phi_base,
Phi, the probe psi and Phi_LA with the family's training functions (Phi_LA on an odd number of examples,
one per step); the main process writes
``OUT/result.json`` (each model's validation losses per epoch and its log-likelihoods of held-out items).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reasonscope.information.evaluator import load_evaluator
from reasonscope.information.training import LarevExample, TrainSettings, train_erm, train_larev, train_probe
from reasonscope.information.variants import baseline_input, rationale_input

LABELS = ["entailment", "neutral", "contradiction"]
SENTENCES = ["The sky is blue", "The sky is not blue", "A robin is a bird", "All birds are animals"]


def data(n: int, offset: int = 0) -> tuple[list[str], list[str], list[str], list[str]]:
    """(baseline inputs, rationale + baseline inputs, masked baseline inputs, labels) of n items."""
    b, rb, masked, y = [], [], [], []
    for i in range(offset, offset + n):
        label = LABELS[i % 3]
        baseline = f"{SENTENCES[i % 4]} {label} {i % 13}"
        b.append(baseline_input(baseline))
        rb.append(rationale_input(f"Ana has {i % 13} apples because {SENTENCES[(i + 1) % 4]}", baseline))
        masked.append(baseline_input(baseline.replace(label, "<mask>")))
        y.append(label)
    return b, rb, masked, y


def main() -> None:
    """Train the four models in ``OUT`` and write ``OUT/result.json`` from the main process."""
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, required=True, help="per process")
    ap.add_argument("--n", type=int, default=16, help="training items")
    args = ap.parse_args()
    out = Path(args.out)
    settings = TrainSettings(epochs=2, lr=1e-3, batch_size=args.batch, seed=0)
    b, rb, masked, y = data(args.n)
    vb, vrb, vmasked, vy = data(6, offset=100)
    result = {}
    phi_base = load_evaluator(args.model)
    res = train_erm(phi_base, b, y, vb, vy, settings, out / "phi_base", label="Phi_base")
    result["phi_base"] = {"val": [h["val_loss"] for h in res.history], "ll": phi_base.log_likelihood(vb, vy)}
    phi = load_evaluator(args.model)
    res = train_erm(phi, rb, y, vrb, vy, settings, out / "phi", label="Phi")
    result["phi"] = {"val": [h["val_loss"] for h in res.history], "ll": phi.log_likelihood(vrb, vy)}
    psi = train_probe(phi, masked, y, vmasked, vy, settings, out / "probe")
    result["probe"] = {"ll": psi.log_likelihood(vmasked, vy)}
    # one example per step and an odd count (n - 1): under two processes the last round is padded (shard)
    examples = [LarevExample([rb[i], rb[i].replace(y[i], "<mask>"), rb[i].replace(y[i], "neutral")], masked[i], y[i])
                for i in range(args.n - 1)]
    phi_la, res = train_larev(str(out / "phi" / "best"), examples, psi, vrb, vy,
                              TrainSettings(epochs=1, lr=1e-3, batch_size=1, seed=0), out / "phi_la",
                              lambda_irm=1.0, lambda_probe=0.01)
    result["phi_la"] = {"val": [h["val_loss"] for h in res.history], "ll": phi_la.log_likelihood(vrb, vy)}
    from accelerate import PartialState

    state = PartialState()
    result["processes"], result["backend"] = state.num_processes, state.backend
    if state.is_main_process:
        (out / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
