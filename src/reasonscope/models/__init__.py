"""The LanguageModel protocol and its providers, created by spec string (openai/..., hf/..., smollm2, mock/...). Public names are re-exported here, imported on first use."""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "GenerationRequest": "base",
    "LanguageModel": "base",
    "ProviderUnavailable": "base",
    "PROVIDERS": "registry",
    "create_model": "registry",
    "split_spec": "registry",
    "usable_models": "registry",
    "MockModel": "mock",
})
