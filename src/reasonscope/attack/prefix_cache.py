"""The few-shot prefix's keys and values, computed once and reused by every loss of the attack.

Every sequence the attack scores starts with the same few-shot prefix (:data:`~reasonscope.attack.
layout.FEW_SHOT`, about 190 SmolLM2 tokens of a 270-token sequence). Under causal attention the
prefix's keys and values depend on the prefix alone, not on the question, answer or chain that follow,
nor on a perturbation of the question's embeddings: they are computed once per attacker (without
gradients: nothing the attack differentiates flows through them) and every forward of the token
search, the embedding search and the objective reads only the rest of the sequence against them.

The logits of the rest are those of the whole sequence at the same positions up to float rounding
(SmolLM2, a 272-token sequence: L_a 1.4e-6 and L_c 3e-7 apart, the gradient with respect to the
question's embeddings 1.3e-5 apart where it reaches 2.3; tested on tiny models), and a search step's
forward and backward costs 2.54x less on CPU (``benchmarks/attack_prefix_cache.py``). A model whose
forward takes no ``past_key_values`` is scored on the whole sequence as before.

A cache can be extended (:meth:`PrefixCache.extended`): the token search extends the prefix's by the question
before its first inserted token, and each batch of candidates further, to its earliest replaced token
(:meth:`reasonscope.attack.attacker.Attacker._objectives`). A forward uses a cache that holds the first tokens of
every row it runs (:meth:`PrefixCache.holds`).
"""

from __future__ import annotations

from typing import Any

from ..models.forward_args import cache_argument, cache_for_rows, output_cache


class PrefixCache:
    """Keys and values of ``prefix`` (token ids) for ``model``.

    :meth:`fresh` hands out a copy per forward (a forward appends the rest's keys and values to the cache it
    is given).
    """

    def __init__(self, model: Any, prefix: list[int]):
        import torch

        self.prefix = list(prefix)
        device = next(model.parameters()).device
        with torch.no_grad():
            cache = output_cache(model(input_ids=torch.tensor([self.prefix], device=device), use_cache=True))
        if isinstance(cache, tuple):  # older transformers return the legacy per-layer tuples
            from transformers import DynamicCache

            cache = DynamicCache.from_legacy_cache(cache)
        self._cache = cache
        self.argument = cache_argument(model)  # the forward's name for it (``cache``, ``past_key_values``)

    @staticmethod
    def supported(model: Any) -> bool:
        """Whether ``model``'s forward takes a key/value cache.

        Every causal LM of transformers does, as ``past_key_values`` or, from transformers 5.24, ``cache``.
        """
        return cache_argument(model) is not None

    def matches(self, prefix: list[int]) -> bool:
        """Whether this cache holds exactly ``prefix``."""
        return prefix == self.prefix

    def holds(self, ids: list[int]) -> bool:
        """Whether this cache holds the first tokens of the sequence ``ids``."""
        return list(ids[:len(self.prefix)]) == self.prefix

    def extended(self, model: Any, ids: list[int]) -> PrefixCache:
        """The cache of this prefix followed by ``ids``: only ``ids`` are run, against a copy of this cache."""
        import torch

        if not ids:
            return self
        device = next(model.parameters()).device
        with torch.no_grad():
            out = model(input_ids=torch.tensor([list(ids)], device=device), use_cache=True,
                        **{self.argument: self.fresh()})
        longer = PrefixCache.__new__(PrefixCache)
        longer.prefix, longer._cache, longer.argument = self.prefix + list(ids), output_cache(out), self.argument
        return longer

    def fresh(self, batch: int = 1) -> Any:
        """A copy of the prefix's cache for ``batch`` rows."""
        return cache_for_rows(self._cache, batch)

    def __len__(self) -> int:
        return len(self.prefix)
