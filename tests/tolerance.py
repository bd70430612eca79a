"""Float comparisons whose tolerance follows the compared tensor's scale.

CPU kernels sum in different orders on different machines (vectorisation width, thread count), so two
computations that are mathematically equal differ by float32 rounding of the *largest* terms involved,
not of each element: an element near zero in a gradient whose largest entry is 10 can be off by 1e-6.
An elementwise ``rtol * |b| + atol`` check fails on such elements for no fault of the code under test.

:func:`assert_close_to_scale` allows every element a difference of ``rel`` times the largest magnitude
in either tensor (plus ``floor`` for all-zero tensors). A wrong implementation differs at the scale of
the values themselves, so ``rel = 1e-4`` still separates right from wrong by orders of magnitude.
"""

from __future__ import annotations

import numpy as np


def _array(x) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=float)


def assert_close_to_scale(actual, expected, rel: float = 1e-4, floor: float = 1e-12, name: str = "") -> None:
    """Assert ``max |actual - expected| <= rel * max(|actual|, |expected|) + floor`` (elementwise difference
    against the tensors' largest magnitude)."""
    a, b = _array(actual), _array(expected)
    assert a.shape == b.shape, f"{name}: shapes differ: {a.shape} != {b.shape}"
    scale = max(float(np.abs(a).max(initial=0.0)), float(np.abs(b).max(initial=0.0)))
    diff = float(np.abs(a - b).max(initial=0.0))
    assert diff <= rel * scale + floor, (
        f"{name}: largest difference {diff:.3g} exceeds {rel:g} x the largest magnitude {scale:.3g}")


def _as_number_or_json(value):
    """A string that holds a number or a JSON document, read as such (stored scores keep both as text)."""
    if not isinstance(value, str):
        return value
    try:
        return float(value)
    except ValueError:
        pass
    if value[:1] in "{[":
        import json

        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def assert_same_up_to_rounding(actual, expected, rel: float = 1e-5, abs_: float = 1e-9, path: str = "") -> None:
    """Assert two nested structures (dicts, lists, tuples, numbers, strings) are equal, floats within
    ``rel`` relative (or ``abs_`` absolute) difference.

    For outputs of model-based scorers (embeddings, NLI probabilities) computed in batches of different
    composition: float32 kernels sum in another order and the last digits differ, while everything else
    (keys, counts, strings, item order) must be identical. Strings holding a number or a JSON document are
    compared by what they hold.
    """
    import math

    a, b = _as_number_or_json(actual), _as_number_or_json(expected)
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{path}: keys differ: {sorted(set(a) ^ set(b))}"
        for k in a:
            assert_same_up_to_rounding(a[k], b[k], rel, abs_, f"{path}.{k}")
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        assert len(a) == len(b), f"{path}: lengths differ: {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_up_to_rounding(x, y, rel, abs_, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float | int) and not isinstance(b, bool) \
            or isinstance(b, float) and isinstance(a, int) and not isinstance(a, bool):
        assert math.isclose(a, b, rel_tol=rel, abs_tol=abs_) or (math.isnan(a) and math.isnan(b)), \
            f"{path}: {a!r} != {b!r} beyond rel {rel:g}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"
