"""LAREV's penalty weights per dataset.

The LAREV thesis (Li, 2026) tunes lambda_IRM and lambda_probe per dataset: 5 and 5e-4 on ECQA
(open-label QA), 25 and 0.005 on e-SNLI (fixed-label NLI, "more structured and label-constrained").
A plan that sets a weight keeps it; an unset weight is taken by the training set's format: ``esnli``,
or any dataset whose items are NLI pairs (``metadata.premise`` and ``metadata.hypothesis`` on every
item), gets the e-SNLI values; ``ecqa`` and every other format the ECQA values (the document gives no
others; QA is the closer task). The chosen values and their source are recorded with the results.

The thesis tuned these on validation data for its T5-large backbone. For the offline evaluator
``embedded-minilm-ed`` (a 49 M-parameter MiniLM encoder-decoder) the e-SNLI lambda_IRM is 5 instead
of 25 (:data:`EVALUATOR_PENALTIES`), measured on 2,000 e-SNLI training pairs with one-verb baselines and
Phi_LA started from Phi for one epoch: at 25 Phi_LA collapses to chance (accuracy 0.320 on 300
held-out pairs, uniform outputs make every IRM penalty 0); at 5 it predicts the label (0.800 with the
gold rationale) and reads the rationale (0.497 with the Vacuous one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..types import Item
from .settings import DATASET_PENALTIES, InformationConfig

__all__ = ["DATASET_NAMES", "DATASET_PENALTIES", "EVALUATOR_PENALTIES", "PenaltyWeights", "penalty_weights"]

DATASET_NAMES = {"esnli": "e-SNLI", "ecqa": "ECQA"}
# evaluator -> dataset -> weights that replace DATASET_PENALTIES for that evaluator (measured; see above)
EVALUATOR_PENALTIES = {"embedded-minilm-ed": {"esnli": (5.0, DATASET_PENALTIES["esnli"][1])}}


@dataclass(frozen=True)
class PenaltyWeights:
    """The LAREV penalty weights used for Phi_LA and where they come from.

    ``lambda_irm`` weighs the IRM penalty and ``lambda_probe`` the leakage-probe term; ``source`` says why
    these values (``"plan"``, a dataset default, or a mix).
    """

    lambda_irm: float
    lambda_probe: float
    source: str  # why these values, e.g. "plan", "e-SNLI default (format esnli)"


def penalty_weights(cfg: InformationConfig, items: list[Item]) -> PenaltyWeights:
    """The penalty weights of a run: the plan's values, else the dataset default.

    The e-SNLI defaults apply to ``format: esnli`` or to items that all carry ``premise`` and ``hypothesis``;
    the ECQA defaults apply otherwise; an evaluator with its own values for that dataset
    (:data:`EVALUATOR_PENALTIES`) takes them instead. A weight the plan sets overrides its default alone.
    """
    fmt = cfg.train.format
    nli = bool(items) and all("premise" in it.metadata and "hypothesis" in it.metadata for it in items)
    if fmt == "esnli" or nli:
        dataset, where = "esnli", "format esnli" if fmt == "esnli" else "NLI items"
    elif fmt == "ecqa":
        dataset, where = "ecqa", "format ecqa"
    else:
        dataset, where = "ecqa", f"format {fmt}: no dataset-specific values"
    by_evaluator = EVALUATOR_PENALTIES.get(cfg.evaluator, {})
    default = by_evaluator.get(dataset, DATASET_PENALTIES[dataset])
    evaluator = f" for {cfg.evaluator}" if dataset in by_evaluator else ""
    why = f"{DATASET_NAMES[dataset]} default{evaluator} ({where})"
    irm = cfg.lambda_irm if cfg.lambda_irm is not None else default[0]
    probe = cfg.lambda_probe if cfg.lambda_probe is not None else default[1]
    if cfg.lambda_irm is not None and cfg.lambda_probe is not None:
        why = "plan"
    elif cfg.lambda_irm is not None or cfg.lambda_probe is not None:
        why = f"plan ({'lambda_irm' if cfg.lambda_irm is not None else 'lambda_probe'}), other from the {why}"
    return PenaltyWeights(irm, probe, why)
