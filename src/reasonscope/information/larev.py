"""Training the LAREV models.

Leakage terms by integrated gradients, the three environments (original, mask, antonym; antonyms from an LLM,
WordNet or a random same-part-of-speech word), the leakage probe and Phi_LA.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from ..execution.calls import complete_cached, planned_request
from ..storage.store import Store
from ..types import Item
from .defaults import PenaltyWeights
from .settings import InformationConfig
from .tables import _result
from .variants import baseline_input


def train_larev_models(cfg: InformationConfig, phi_base, phi, tr: list[Item], va: list[Item], baselines: dict[str, str],
                       y: dict[str, str], folders: dict[str, Path], store: Store, weights: PenaltyWeights, *,
                       seed: int, console: Console):
    """Leakage terms (IG on Phi_base, batched and cached), environments, probe psi, Phi_LA."""
    from .ig_cache import AttributionCache
    from .leakage import (
        AntonymSource,
        content_words,
        environments,
        leakage_attributions,
        leakage_term,
        wordnet_status,
    )

    try:
        import captum  # noqa: F401
    except ImportError:
        raise RuntimeError("LAREV needs captum for integrated gradients: pip install 'reasonscope[information]' "
                           "(or methods: [rev])") from None
    from .training import LAREV_PRECISION, LarevExample, TrainSettings, train_larev, train_probe

    mask = phi.tokenizer.mask_token or "<mask>"
    shift = len(baseline_input(""))
    attributions = leakage_attributions(phi_base, [baseline_input(baselines[it.id]) for it in tr + va],
                                        [y[it.id] for it in tr + va], n_steps=cfg.ig_steps,
                                        batch_size=cfg.ig_batch_size,
                                        cache=AttributionCache(store, folders["phi_base"], cfg.ig_steps),
                                        console=console, label="integrated gradients on Phi_base")
    terms = {}
    for it, (offsets, attr) in zip(tr + va, attributions, strict=True):
        terms[it.id] = leakage_term(baselines[it.id], [(max(0, s - shift), max(0, e - shift)) if e > shift
                                                       else (0, 0) for s, e in offsets], attr,
                                    exclude_stop_words=cfg.leak_terms == "content")
    asked = [(t.word, baselines[i]) for i, t in terms.items() if t is not None and not t.word.isdigit()]
    llm_antonyms, antonym_model_error = _llm_antonyms(cfg, asked, store, seed, console)
    antonym = AntonymSource(content_words(list(baselines.values())), llm_antonyms, seed, cfg.wordnet)
    examples, masked_train, env_info = [], [], []
    train_ids = {it.id for it in tr}
    for it in tr + va:
        term = terms[it.id]
        envs, prov = environments(baselines[it.id], term, mask, antonym, it.id)
        env_info.append({"item": it.id, "baseline": baselines[it.id], **prov, **{f"env_{k}": v for k, v in envs.items()},
                         "attribution": term.attribution if term else None})
        if it.id in train_ids:
            env_inputs, _ = phi.fit_inputs([it.rationale] * 3, [envs[e] for e in ("original", "mask", "antonym")])
            examples.append(LarevExample(env_inputs, baseline_input(envs["mask"]), y[it.id]))
            masked_train.append(baseline_input(envs["mask"]))
    masked_val = [baseline_input(e["env_mask"]) for e in env_info[len(tr):]]
    probe_settings = TrainSettings(cfg.probe_epochs, cfg.lr, cfg.probe_batch_size, seed, cfg.mixed_precision)
    psi = train_probe(phi, masked_train, [y[i.id] for i in tr], masked_val, [y[i.id] for i in va], probe_settings,
                      folders["probe"], console=console)
    la_settings = TrainSettings(cfg.larev_epochs, cfg.lr, 1, seed, LAREV_PRECISION)  # float32 (training.py)
    val_inputs, _ = phi.fit_inputs([i.rationale for i in va], [baselines[i.id] for i in va])
    # Phi_LA starts from Phi (saved at folders['phi'] / 'best') unless the plan asks for the backbone
    start = str(folders["phi"] / "best") if cfg.larev_init == "phi" else cfg.evaluator
    phi_la, res = train_larev(start, examples, psi, val_inputs, [y[i.id] for i in va], la_settings,
                              folders["phi_la"], lambda_irm=weights.lambda_irm, lambda_probe=weights.lambda_probe,
                              console=console, max_input_tokens=cfg.max_input_tokens)
    sources: dict[str, int] = {}
    for e in env_info:
        sources[e.get("antonym_source", "none")] = sources.get(e.get("antonym_source", "none"), 0) + 1
    probe_state = json.loads((folders["probe"] / "state.json").read_text())
    return phi_la, {"probe": {"best_val_loss": probe_state["best_val"], "best_epoch": probe_state["best_epoch"],
                              "examples_per_s": probe_state.get("examples_per_s")},
                    "phi_la": _result(res), "antonym_sources": sources, "antonym_model_error": antonym_model_error,
                    "wordnet": wordnet_status(cfg.wordnet)}, env_info

# the form an LLM antonym is constrained to (models.structured): one word
ANTONYM_FORM = r"[A-Za-z][A-Za-z-]{0,30}"


def _llm_antonyms(cfg: InformationConfig, asked: list[tuple[str, str]], store: Store, seed: int, console: Console
                  ) -> tuple[Callable[[str, str], str | None] | None, str | None]:
    """The antonym model's lookup and why it could not be used.

    Returns ``(lookup, error)``: ``lookup`` maps (word, sentence) to the provider's one-word antonym (None
    when unreadable), all asked in one cached pass; it is None without an antonym model or when the model
    cannot be used, and then ``error`` says which model failed and why (printed as a warning here, kept in
    the run's training record and named in the antonym notes). Never silent.
    """
    if cfg.antonym_model is None or not asked:
        return None, None
    from ..models.registry import create_model

    spec = cfg.antonym_model.spec
    try:
        model = create_model(cfg.antonym_model)
        missing = model.missing_requirements()
    except Exception as exc:  # an unknown provider, a model that fails to load: named, then WordNet is used
        missing = f"{type(exc).__name__}: {exc}"
    if missing:
        error = f"antonym_model {spec} cannot be used ({missing})"
        console.print(f"[yellow]warning:[/] {error}; antonyms come from WordNet, else random words")
        return None, error
    planned = {(word, sentence): planned_request(
        model, "information", None, "antonym", 0,
        [{"role": "user", "content": f"Sentence: {sentence}\nGive one word with the opposite meaning of '{word}' that "
          "fits the sentence. Reply with the word only."}], seed, "antonym-v1", {"task": "antonym"}, item_id=word,
        structured={"regex": ANTONYM_FORM})
        for word, sentence in asked}
    completions = complete_cached(model, list(planned.values()), store, console=console, label="antonyms")
    table: dict[tuple[str, str], str | None] = {}
    for pair, p in planned.items():
        c = completions[p.key]
        words = c.text.strip().split()
        table[pair] = words[0].strip(".,;:'\"") if words and not c.error else None
    model.close()
    return (lambda word, sentence: table.get((word, sentence))), None
