"""Providers, registered lazily by name: nothing is imported until a spec names the provider.

Spec strings: ``openai/<model>``, ``openai-compatible/<model>`` (needs ``base_url``),
``anthropic/<model>``, ``hf/<id-or-path>``, ``smollm2``, ``mock/<kind>``.
"""

from __future__ import annotations

import importlib

from ..shared_settings import ModelConfig
from .base import LanguageModel

PROVIDERS: dict[str, str] = {
    "openai": "reasonscope.models.openai_provider:OpenAIModel",
    "openai-compatible": "reasonscope.models.openai_provider:OpenAIModel",
    "anthropic": "reasonscope.models.anthropic_provider:AnthropicModel",
    "hf": "reasonscope.models.hf_provider:HFModel",
    "smollm2": "reasonscope.models.smollm2:SmolLM2Model",
    "mock": "reasonscope.models.mock:MockModel",
}


def split_spec(spec: str) -> tuple[str, str]:
    """Split a model spec into ``(provider, model id)``; plain ``smollm2`` means SmolLM2-135M-Instruct.

    Raises:
        ValueError: When the provider is unknown or the spec has no model after it.
    """
    provider, _, model_id = spec.partition("/")
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} in model spec {spec!r}; known: {sorted(PROVIDERS)}")
    if provider == "smollm2":
        return provider, model_id or "SmolLM2-135M-Instruct"
    if not model_id:
        raise ValueError(f"model spec {spec!r} needs a model after the provider, e.g. {provider}/<model>")
    return provider, model_id


def create_model(config: ModelConfig | str) -> LanguageModel:
    """The :class:`LanguageModel` of a model's settings (or of a bare spec such as ``openai/gpt-4o-mini``)."""
    if isinstance(config, str):
        config = ModelConfig(spec=config)
    provider, model_id = split_spec(config.spec)
    module_name, _, cls_name = PROVIDERS[provider].partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    model = cls(model_id, config)
    model.provider = provider
    return model


def usable_models(configs: list[ModelConfig]) -> tuple[list[LanguageModel], dict[str, str]]:
    """The models that can run here, and name -> why for the others (missing key, SDK or weights)."""
    models, skipped = [], {}
    for mc in configs:
        model = create_model(mc)
        why = model.missing_requirements()
        if why:
            skipped[model.name] = why
        else:
            models.append(model)
    return models, skipped
