"""What the evidence family brings to a run before scoring.

Its train and test sets, its label set, and
either one label-and-rationale request per test item and model, or the predictions it imports instead
(``predictions`` in its settings). Read by :meth:`reasonscope.evidence.entry.EvidenceFamily.prepare`;
:func:`prepare_evidence_import` does the same for ``reasonscope score`` (the imported items are the test
split).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..family import FamilyInputs, GenerationContext

if TYPE_CHECKING:
    from ..execution.calls import PlannedRequest
    from ..models.base import LanguageModel
    from ..types import Item
    from .settings import EvidenceConfig

__all__ = ["evidence_requests", "prepare_evidence", "prepare_evidence_import"]


def evidence_requests(model: LanguageModel, test: list[Item], ds: str, labels: list[str], seed: int
                      ) -> list[PlannedRequest]:
    """One label-and-rationale request per test item (variant ``evidence``).

    Its answer is constrained to ``{"label": one of labels, "rationale": text}``.
    """
    from ..execution.calls import planned_request
    from ..judge.schemas import label_rationale_schema
    from .scoring import PROMPT_VERSION, build_messages

    schema = {"json_schema": label_rationale_schema(labels)}
    return [planned_request(model, ds, item, "evidence", 0, build_messages(item, labels), seed, PROMPT_VERSION,
                            {"task": "evidence", "target": item.target, "answer_type": "label", "choices": labels,
                             "text": item.input}, structured=schema)
            for item in test]


def prepare_evidence(settings: EvidenceConfig, ctx: GenerationContext) -> FamilyInputs:
    """Read the train and test sets (their text fields checked) and the imported predictions, if any.

    With predictions, their rows are stored as the test set's completions and no model is asked; else
    each model gets one request per test item.
    """
    from ..data.files import resolve_path
    from ..data.loaders import load_dataset
    from ..types import Completion
    from .scoring import check_text_fields, class_labels, read_prediction_file

    train = load_dataset(settings.train, base_dir=ctx.base_dir, seed=ctx.seed).items
    test = load_dataset(settings.test, base_dir=ctx.base_dir, seed=ctx.seed).items
    check_text_fields(train + test, settings.text_fields)
    items = {settings.train.name: train, settings.test.name: test}
    name = settings.test.name
    if settings.predictions:
        path = resolve_path(settings.predictions, ctx.base_dir)
        rows = [(line, model, name, item_id, "evidence", 0, Completion(text=text, finish_reason="stop"), None)
                for line, model, item_id, text in read_prediction_file(str(path))]
        return FamilyInputs(items=items, imported=(path, rows))
    labels = class_labels(train)
    return FamilyInputs(items=items, needs_models=True, requests_per_model=len(items[name]),
                        make_requests=lambda model, seed: evidence_requests(model, test, name, labels, seed))


def prepare_evidence_import(settings: EvidenceConfig, ctx: GenerationContext, source: str
                            ) -> tuple[EvidenceConfig, dict[str, list[Item]]]:
    """The settings to score imported outputs with (their one dataset is the test split) and the train set."""
    from ..data.loaders import load_dataset

    if len(ctx.datasets) != 1:
        raise ValueError(f"evidence scoring takes one dataset per file; {source} holds {sorted(ctx.datasets)}")
    train = load_dataset(settings.train, seed=ctx.seed).items
    test = settings.test.model_copy(update={"name": next(iter(ctx.datasets))})
    return settings.model_copy(update={"test": test}), {settings.train.name: train}
