"""One model load at a time per process.

transformers builds a model inside context managers that change process-wide state for the
duration of ``from_pretrained``: weight initialisers of ``torch.nn.init`` and
``PreTrainedModel.init_weights`` / ``tie_weights`` are swapped for no-ops, the default dtype and
``torch.linspace`` are patched, parameters are created on the meta device. Two loads in two threads
interleave these swaps and the second restores the first one's no-ops "back": from then on tied
weights are no longer tied, and the next model with tied embeddings (SmolLM2) keeps its output layer
on the meta device, so ``model.to(device)`` fails with "Cannot copy out of meta tensor; no data!".
reasonscope loads scoring models in a background thread while the generating model loads, so this
happened in ``reasonscope demo`` on a busy machine.

Every load in reasonscope (``from_pretrained``, ``from_config``, an encoder-decoder built from two
checkpoints, ``bert_score.BERTScorer``, and the move to the device) runs inside
:func:`model_loading`, which holds one process-wide re-entrant lock. Loads are serialised; inference
is not (it does not touch that state). A test loads two tiny models from two threads many times.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_LOAD_LOCK = threading.RLock()


@contextlib.contextmanager
def model_loading() -> Iterator[None]:
    """Hold the process-wide model-loading lock for the duration of the block (re-entrant)."""
    with _LOAD_LOCK:
        yield
