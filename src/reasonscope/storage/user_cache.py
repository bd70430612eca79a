"""The user cache folder of converted models (SmolLM2 in safetensors, scoring models in ONNX).

``platformdirs.user_cache_dir("reasonscope")``; ``REASONSCOPE_CACHE_DIR`` overrides it. Scores are not
kept here: they live in each run folder's store (the score cache).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The reasonscope cache folder: ``$REASONSCOPE_CACHE_DIR`` when set, else the user cache directory."""
    env = os.environ.get("REASONSCOPE_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("reasonscope"))
