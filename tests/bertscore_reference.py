"""The ``bert-score`` package's BERTScore F1 (no IDF, no rescaling): the reference the project's BERTScore is
tested against."""

from __future__ import annotations


def bert_score_f1(model_path: str, num_layers: int, a: list[str], b: list[str]) -> list[float]:
    """F1 of each pair by ``bert_score.BERTScorer``, one pair at a time (no other pair's padding enters the max).

    A pair with an empty text is 0.0 (``bert-score`` 0.3.13 fails on one with transformers 5).
    """
    from bert_score import BERTScorer

    scorer = BERTScorer(model_type=model_path, num_layers=num_layers, lang="en", rescale_with_baseline=False,
                        idf=False)
    out = []
    for x, y in zip(a, b, strict=True):
        if not (x.strip() and y.strip()):
            out.append(0.0)
            continue
        out.append(float(scorer.score([x], [y], verbose=False)[2][0]))
    return out
