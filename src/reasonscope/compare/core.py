"""Paired comparison of two runs, metric by metric, and the gate's exit code.

For every item-level metric both runs hold (every family, every dataset, every model pair), on the items both
runs scored (the stored item key, which carries the dataset and, where a family scores them apart, the
variant):

* **Difference** d_i = NEW_i - BASE_i, reported as the mean over the pairs with a 95% interval and a two-sided
  p-value from :func:`reasonscope.stats.bootstrap.paired_difference`, which picks the method from the values:

  - 0/1 values on both sides (a share: CQ, attack success): Newcombe's hybrid score interval for paired
    proportions, and the exact paired sign-flip test, which for 0/1 outcomes is McNemar's exact test (the
    exact binomial test on the discordant pairs);
  - values in a known range (the catalogue's, e.g. [0, 1] for RS, SS, coverage, attribute scores): the
    quasi-binomial score interval of the differences, and the paired sign-flip permutation test (exact on a
    lattice or for n <= 13, else 9,999 seeded random sign patterns);
  - values without a known range (REV in nats): Student t + studentized bootstrap interval, the same test.

  Where several items share a cluster (``metadata.cluster``, else ``metadata.premise`` when pairs share a
  premise), the differences are averaged per cluster first: the interval, the test and ``n_shared`` are over
  clusters.
* **Holm** (:func:`reasonscope.stats.multiple.holm`) over the p-values of every gating metric compared (the
  whole table, or the ``--metrics`` selection); the metrics shown but not gating are adjusted among
  themselves.
* **Verdict** from the catalogue's direction (:mod:`reasonscope.compare.metrics`): ``worse`` / ``better``
  when the Holm p-value is at most ``alpha`` (0.05), ``changed`` when the metric has no better direction,
  else ``no change``. **Effect size**: Cohen's d_z = mean(d) / sd(d) (ddof 1) of the paired differences.
* **Unpaired** only when the runs share no item at all: difference of the two means, percentile bootstrap
  interval (``scipy.stats.bootstrap``, independent resampling of each side) and a two-sample permutation test
  (``scipy.stats.permutation_test``, 9,999 relabellings), stated as such; it cannot gate (exit 2).

The gate: **exit 1** when at least one gating metric is ``worse`` with |difference| > ``min_effect`` (in the
metric's unit), **exit 2** when the runs cannot be compared (no model pair, no shared item, items with one id
but different content, or a family whose settings, prompt templates or runtimes differ, unless ``allow_mismatch``),
else **exit 0**. A family's definition is its settings (:func:`definition_check`; operational ones aside; a
setting one run did not store reads as the default of the family's settings model, ``settings_models``), the
prompt templates its generations were made with and the runtimes that made them
(:mod:`reasonscope.compare.templates`); a template that could
not be checked (a store from before templates were recorded) is noted in ``not_checked`` and blocks nothing.
Unreadable folders raise :class:`~reasonscope.compare.source.CompareError` before anything is compared.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ..metric_specs import MetricSpec
from .defaults import SettingsModels, settings_model
from .metrics import (
    Catalogue,
    family_specs,
    flatten,
    metric_label,
    resolve_spec,
    select,
    selector_matches,
    settings_differences,
)
from .model import ItemChange, MetricComparison, Mismatch, RunComparison, RunSide
from .source import CompareError, RunSource, open_run
from .templates import ReadsAnswers, default_reads_answers, runtime_check, summary, template_check

CLUSTER_KEYS = ("cluster", "premise")
"""Item metadata fields that name an item's cluster, in order of preference."""
OPERATIONAL_SETTINGS = frozenset({"batch_size", "workers", "executor", "concurrency", "device", "max_retries",
                                  "retry_after_cap_s", "retry_max_s", "timeout_s", "rpm", "tpm", "api_key_env"})
"""Settings (last path component) that change how a family runs, not what it measures: never a mismatch (a
judge's or a scoring model's retries, time-outs, rate limits and key variable among them)."""
ITEM_FIELDS = ("input", "target", "choices", "answer_type")
"""The parts of an item that must agree for two runs' items of one id to be the same item."""


def compare_runs(base: str | Path, new: str | Path, *, pairs: dict[str, str] | None = None,
                 metrics: list[str] | None = None, min_effect: float = 0.0, allow_mismatch: bool = False,
                 base_run_id: str | None = None, new_run_id: str | None = None, alpha: float = 0.05,
                 confidence: float = 0.95, top_items: int = 5, n_permutations: int = 9999,
                 seed: int = 0, catalogue: Catalogue | None = None,
                 reads_answers: ReadsAnswers | None = None,
                 settings_models: SettingsModels | None = None) -> RunComparison:
    """Compare run folder ``new`` with run folder ``base`` on their shared items (module docstring).

    Args:
        base: The baseline run folder.
        new: The run folder compared with it.
        pairs: BASE model name -> NEW model name, for models whose names differ (default: same names; one
            unmatched model on each side is paired).
        metrics: The metrics the gate reads (``--metrics``; see
            :func:`reasonscope.compare.metrics.selector_matches`); None: every metric.
        min_effect: A worse difference must exceed this (absolute, in the metric's unit) to fail the gate.
        allow_mismatch: Compare and gate even where a family's settings or an item's content differ.
        base_run_id: Which run of BASE's store (default: its latest finished run).
        new_run_id: Which run of NEW's store.
        alpha: The gate's family-wise error rate.
        confidence: The intervals' level.
        top_items: Items kept per metric for the drill-down (largest |change| first).
        n_permutations: Random sign patterns where the test is not exact.
        seed: Seeds the permutations and bootstrap resamples.
        catalogue: A family name -> its metric specs (the command line passes the family registry's); default:
            the shared catalogue (:mod:`reasonscope.compare.metrics`).
        reads_answers: ``(family, its stored settings) -> whether it scores the run's answers`` (the command line
            asks the family registry), so that a change of the answers' prompt template is a mismatch of those
            families only; default, or where it returns None: every family without requests or records of its
            own (:func:`reasonscope.compare.templates.default_reads_answers`).
        settings_models: A family name -> its settings model (the command line and the viewer pass the
            registry's): a setting that one run's stored settings lack reads as that model's default
            (:mod:`reasonscope.compare.defaults`), so a setting added after a run was written is no mismatch;
            default, or for a family it does not know: the stored settings as they are (a missing setting
            differs from any value).

    Returns:
        The comparison; its ``exit_code`` is the gate's decision.

    Raises:
        CompareError: A folder is not a run folder, its run is still being written, its store is damaged,
            the runs hold different datasets, a ``--pair`` or ``--metrics`` name is unknown, or an option is
            out of range. The message names the file and what was expected.
    """
    if not (min_effect >= 0 and math.isfinite(min_effect)):
        raise CompareError(f"--min-effect: expected a number >= 0, got {min_effect}")
    if not 0 < alpha < 1 or not 0 < confidence < 1:
        raise CompareError(f"alpha and confidence must lie in (0, 1), got {alpha} and {confidence}")
    with open_run(base, base_run_id, "BASE") as b, open_run(new, new_run_id, "NEW") as n:
        return _compare(b, n, pairs=pairs, metrics=metrics, min_effect=min_effect, allow_mismatch=allow_mismatch,
                        alpha=alpha, confidence=confidence, top_items=top_items, n_permutations=n_permutations,
                        seed=seed, catalogue=catalogue, reads_answers=reads_answers,
                        settings_models=settings_models)


def side(src: RunSource) -> RunSide:
    """The summary of one run as the comparison reports it."""
    return RunSide(path=str(src.path), store=str(src.store_path), run_id=src.run["run_id"],
                   status=src.run["status"], created=src.run.get("created"), seed=src.run.get("seed"),
                   models=src.models, datasets=src.datasets, families=src.families,
                   items=len({k[3] for k in src.scores}), templates=summary(src.templates))


def model_pairs(b: RunSource, n: RunSource, given: dict[str, str] | None) -> tuple[dict[str, str], list[Mismatch]]:
    """BASE model -> NEW model: ``given`` first, then equal names, then one unmatched model on each side."""
    base_models, new_models = set(b.models), set(n.models)
    pairs: dict[str, str] = {}
    for bm, nm in (given or {}).items():
        if bm not in base_models:
            raise CompareError(f"{b.store_path}: --pair {bm}={nm}: BASE has no model {bm!r} (it has "
                               f"{', '.join(sorted(base_models)) or 'none'})")
        if nm not in new_models:
            raise CompareError(f"{n.store_path}: --pair {bm}={nm}: NEW has no model {nm!r} (it has "
                               f"{', '.join(sorted(new_models)) or 'none'})")
        pairs[bm] = nm
    taken = set(pairs.values())
    for m in sorted(base_models & new_models):
        if m not in pairs and m not in taken:
            pairs[m] = m
    left_b = sorted(base_models - set(pairs))
    left_n = sorted(new_models - set(pairs.values()))
    if len(left_b) == 1 and len(left_n) == 1:
        pairs[left_b[0]] = left_n[0]
        left_b, left_n = [], []
    notes = [Mismatch(kind="models", what=m, base=m, new=None,
                      message=f"BASE model {m!r} has no counterpart in NEW (pair it with --pair {m}=NAME)")
             for m in left_b]
    notes += [Mismatch(kind="models", what=m, base=None, new=m,
                       message=f"NEW model {m!r} has no counterpart in BASE (pair it with --pair NAME={m})")
              for m in left_n]
    return pairs, notes


def _same_item(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ITEM_FIELDS)


def dataset_check(b: RunSource, n: RunSource) -> tuple[set[str], list[Mismatch]]:
    """The item keys whose content differs between the runs, and their mismatches.

    Raises:
        CompareError: When the runs have items but no dataset in common.
    """
    bd, nd = set(b.datasets), set(n.datasets)
    if bd and nd and not bd & nd:
        raise CompareError(f"{n.store_path}: NEW holds the datasets {', '.join(sorted(nd))}, BASE "
                           f"({b.store_path}) holds {', '.join(sorted(bd))}: runs of different datasets cannot be "
                           "compared; expected two runs of the same datasets")
    differ = {k for k in set(b.items) & set(n.items) if not _same_item(b.items[k], n.items[k])}
    notes = []
    for dataset in sorted({k.split("/", 1)[0] for k in differ}):
        keys = sorted(k for k in differ if k.startswith(dataset + "/"))
        notes.append(Mismatch(kind="dataset", what=dataset, base=len(keys), new=keys[:10],
                              message=f"dataset {dataset!r}: {len(keys)} items have the same id but different "
                                      f"content in the two runs (e.g. {keys[0]}); they are left out of every "
                                      "comparison"))
    return differ, notes


def definition_check(b: RunSource, n: RunSource, families: set[str],
                     settings_models: SettingsModels | None = None) -> list[Mismatch]:
    """The families whose settings differ between the runs (operational settings aside).

    A setting one run did not store reads as the default of the family's settings model, where
    ``settings_models`` knows it (:func:`reasonscope.compare.metrics.settings_differences`); the message says
    which side's value is such a default.
    """
    out = []
    bf, nf = b.run["config"].get("families") or {}, n.run["config"].get("families") or {}
    for family in sorted(families):
        model = settings_model(settings_models, family)
        stored = {"BASE": flatten(bf.get(family) or {}), "NEW": flatten(nf.get(family) or {})}
        for path, x, y in settings_differences(bf.get(family), nf.get(family), model):
            if path.rsplit(".", 1)[-1] in OPERATIONAL_SETTINGS:
                continue
            filled = [side for side, value in (("BASE", x), ("NEW", y))
                      if value is not None and path not in stored[side]]
            note = "".join(f" ({side} did not store it: the default)" for side in filled)
            out.append(Mismatch(kind="definition", family=family, what=f"families.{family}.{path}", base=x, new=y,
                                message=f"{family}: families.{family}.{path} is {x!r} in BASE and {y!r} in NEW"
                                        f"{note}: its metrics are not computed the same way"))
    return out


def answer_readers(b: RunSource, n: RunSource, reads_answers: ReadsAnswers | None):
    """``family -> whether it scores the answers``: ``reads_answers`` on either run's settings, else the default."""
    bf, nf = b.run["config"].get("families") or {}, n.run["config"].get("families") or {}

    def reads(family: str) -> bool:
        if reads_answers is not None:
            known = [x for x in (reads_answers(family, bf.get(family)), reads_answers(family, nf.get(family)))
                     if x is not None]
            if known:
                return any(known)
        return default_reads_answers(family, b.templates, n.templates)

    return reads


def item_of(src: RunSource, key: str) -> str | None:
    """The stored item (``dataset/id``) a score's item key names: the key itself, or one dataset + the key."""
    if key in src.items:
        return key
    found = [d for d in src.datasets if f"{d}/{key}" in src.items]
    return f"{found[0]}/{key}" if len(found) == 1 else None


def _cluster_labels(src: RunSource, keys: list[str]) -> list[str] | None:
    """Per key, its cluster label (module docstring), or None when the items form no cluster of two or more."""
    for field in CLUSTER_KEYS:
        labels = []
        for k in keys:
            item = src.items.get(item_of(src, k) or "", {})
            value = (item.get("metadata") or {}).get(field)
            if value is None:
                break
            labels.append(str(value))
        else:
            if labels and len(set(labels)) < len(labels):
                return labels
    return None


def _in_range(values: np.ndarray, spec: MetricSpec | None) -> tuple[float, float] | None:
    rng = spec.range if spec is not None else None
    if rng is not None and values.size and (values.min() < rng[0] or values.max() > rng[1]):
        return None
    return rng


def _kind(values: np.ndarray, rng: tuple[float, float] | None) -> str:
    if values.size and bool(np.all((values == 0) | (values == 1))):
        return "share"
    return "bounded" if rng is not None else "unbounded"


def _effect(d: np.ndarray) -> float | None:
    if d.size < 2:
        return None
    sd = float(d.std(ddof=1))
    return None if sd == 0 else float(d.mean()) / sd


def _cluster_means(values: list[float], labels: list[str] | None) -> np.ndarray:
    """The values, or with ``labels`` their per-cluster means.

    :func:`reasonscope.stats.bootstrap.cluster_means`: the averaging the interval and the test use.
    """
    from ..stats.bootstrap import cluster_means

    return np.asarray(values if labels is None else cluster_means(values, labels), dtype=float)


def paired_row(bv: dict[str, float], nv: dict[str, float], shared: list[str], spec: MetricSpec | None,
               clusters: list[str] | None, *, confidence: float, n_permutations: int, seed: int) -> dict[str, Any]:
    """The paired statistics of one metric on the shared keys (module docstring)."""
    from ..stats.bootstrap import paired_difference

    # 12 decimals: equal scores stored through different float paths (0.7 vs 0.7000000000000001) pair as equal,
    # not as a difference of 1e-16 that no test should read
    a = [round(nv[k], 12) for k in shared]
    b = [round(bv[k], 12) for k in shared]
    both = np.asarray(a + b, dtype=float)
    rng = _in_range(both, spec)
    res = paired_difference(a, b, confidence=confidence, n_permutations=n_permutations, seed=seed,
                            bounds=rng if rng is not None else (None if spec is not None else "infer"),
                            clusters=clusters)
    d = _cluster_means([x - y for x, y in zip(a, b, strict=True)], clusters)
    return {"kind": _kind(both, rng), "value_range": rng, "paired": True, "n_shared": res.n,
            "base_mean": float(_cluster_means(b, clusters).mean()), "new_mean": float(_cluster_means(a, clusters).mean()),
            "difference": res.value, "ci_low": res.low, "ci_high": res.high, "interval": res.method,
            "p_value": res.p_value, "test": res.test_label or "", "effect_size": _effect(d),
            "clustered": clusters is not None}


def unpaired_row(bv: dict[str, float], nv: dict[str, float], spec: MetricSpec | None, *, confidence: float,
                 n_permutations: int, seed: int) -> dict[str, Any]:
    """The unpaired two-sample statistics of one metric (only when the runs share no item)."""
    from scipy import stats

    a, b = np.asarray(list(nv.values()), dtype=float), np.asarray(list(bv.values()), dtype=float)
    both = np.concatenate([a, b])
    rng = _in_range(both, spec)
    diff = float(a.mean() - b.mean())

    def statistic(x, y, axis=-1):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    low = high = p = None
    interval, test = "no interval (fewer than 2 values on a side)", "no test (fewer than 2 values on a side)"
    if a.size >= 2 and b.size >= 2:
        boot = stats.bootstrap((a, b), statistic, confidence_level=confidence, n_resamples=2000, method="percentile",
                               vectorized=True, rng=np.random.default_rng(seed))
        low, high = float(boot.confidence_interval.low), float(boot.confidence_interval.high)
        interval = "unpaired percentile bootstrap (2,000 resamples of each side)"
        perm = stats.permutation_test((a, b), statistic, permutation_type="independent", vectorized=True,
                                      n_resamples=n_permutations, rng=np.random.default_rng(seed))
        p = float(perm.pvalue)
        test = (f"two-sample permutation test of the difference of means, two-sided, {n_permutations:,} "
                "relabellings (unpaired: the runs share no item)")
    pooled = math.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2)) \
        if a.size >= 2 and b.size >= 2 else 0.0
    return {"kind": _kind(both, rng), "value_range": rng, "paired": False, "n_shared": 0,
            "base_mean": float(b.mean()), "new_mean": float(a.mean()), "difference": diff, "ci_low": low,
            "ci_high": high, "interval": interval, "p_value": p, "test": test,
            "effect_size": diff / pooled if pooled > 0 else None, "clustered": False}


def _groups(src: RunSource, excluded: set[str]) -> dict[tuple[str, str, str], dict[str, float]]:
    """``(family, metric, model)`` -> item key -> value (values present, content-mismatched items left out)."""
    out: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for (family, metric, model, key), value in src.scores.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if (item_of(src, key) or key) in excluded:
            continue
        out[(family, metric, model)][key] = float(value)
    return out


def _verdict(row: dict[str, Any], spec_dir: bool | None, alpha: float) -> str:
    p = row["p_holm"]
    if row["difference"] is None:
        return "not compared"
    if p is None or p > alpha or row["difference"] == 0:
        return "no change"
    if spec_dir is None:
        return "changed"
    return "better" if (row["difference"] > 0) == spec_dir else "worse"


def _compare(b: RunSource, n: RunSource, *, pairs: dict[str, str] | None, metrics: list[str] | None,
             min_effect: float, allow_mismatch: bool, alpha: float, confidence: float, top_items: int,
             n_permutations: int, seed: int, catalogue: Catalogue | None,
             reads_answers: ReadsAnswers | None = None,
             settings_models: SettingsModels | None = None) -> RunComparison:
    from ..stats.multiple import holm

    model_map, mismatches = model_pairs(b, n, pairs)
    differ, dataset_notes = dataset_check(b, n)
    mismatches += dataset_notes
    bg, ng = _groups(b, differ), _groups(n, differ)
    base_keys = {k for g in bg.values() for k in g}
    new_keys = {k for g in ng.values() for k in g}
    any_shared = bool(base_keys & new_keys)
    specs = {f: family_specs(f, catalogue) for f in {k[0] for k in bg} | {k[0] for k in ng}}

    todo = []  # (family, metric, base model, new model, spec)
    for (family, metric, bm) in sorted(bg):
        nm = model_map.get(bm)
        if nm is None or (family, metric, nm) not in ng:
            continue
        todo.append((family, metric, bm, nm, resolve_spec(family, metric, specs[family])))
    if metrics:
        unknown = select(metrics, ((f, m, sp) for f, m, _, _, sp in todo))
        if unknown:
            known = ", ".join(sorted({f"{f}/{m}" for f, m, *_ in todo})) or "none"
            raise CompareError(f"--metrics {', '.join(unknown)}: no such metric in both runs ({b.store_path} and "
                               f"{n.store_path}); expected one of: {known} (or a family name)")
    compared_families = {t[0] for t in todo}
    definitions = definition_check(b, n, compared_families, settings_models)
    readers = answer_readers(b, n, reads_answers)
    prompts, not_checked = template_check(b.templates, n.templates, compared_families, model_map, readers)
    definitions += prompts + runtime_check(b.runtimes, n.runtimes, compared_families, model_map, readers)
    mismatches += definitions
    differing = {m.family for m in definitions}

    rows: list[dict[str, Any]] = []
    changes: list[ItemChange] = []
    for family, metric, bm, nm, spec in todo:
        bv, nv = bg[(family, metric, bm)], ng[(family, metric, nm)]
        shared = sorted(set(bv) & set(nv))
        common = dict(family=family, metric=metric, label=metric_label(spec, metric),
                      spec=spec.key if spec is not None else None, base_model=bm, new_model=nm,
                      higher_is_better=spec.higher_is_better if spec is not None else None,
                      only_in_base=len(set(bv) - set(nv)), only_in_new=len(set(nv) - set(bv)),
                      gates=not metrics or any(selector_matches(s, family, metric, spec) for s in metrics),
                      definition_differs=family in differing, note=None)
        if shared:
            stats_row = paired_row(bv, nv, shared, spec, _cluster_labels(b, shared), confidence=confidence,
                                   n_permutations=n_permutations, seed=seed)
            changes += _top_changes(b, n, family, metric, bm, nm, bv, nv, shared, top_items,
                                    spec.higher_is_better if spec is not None else None)
        elif not any_shared:
            stats_row = unpaired_row(bv, nv, spec, confidence=confidence, n_permutations=n_permutations, seed=seed)
            common["note"] = "unpaired: the runs share no item"
        else:
            stats_row = {"kind": "bounded" if spec is not None and spec.range else "unbounded",
                         "value_range": spec.range if spec is not None else None, "paired": True, "n_shared": 0,
                         "base_mean": None, "new_mean": None, "difference": None, "ci_low": None, "ci_high": None,
                         "interval": "none (no shared item has a value on both sides)", "p_value": None,
                         "test": "none", "effect_size": None, "clustered": False}
            common["note"] = "no shared item has a value on both sides"
        rows.append({**common, **stats_row})

    for gating in (True, False):
        part = [r for r in rows if r["gates"] == gating]
        for r, p in zip(part, holm([r["p_value"] for r in part]), strict=True):
            r["p_holm"] = p
    worse = better = failed = 0
    for r in rows:
        r["verdict"] = _verdict(r, r["higher_is_better"], alpha)
        r["fails_gate"] = bool(r["gates"] and r["paired"] and r["verdict"] == "worse"
                               and abs(r["difference"]) > min_effect)
        worse += r["verdict"] == "worse"
        better += r["verdict"] == "better"
        failed += r["fails_gate"]
    n_gating = sum(r["gates"] and r["p_value"] is not None for r in rows)
    n_shown = sum(not r["gates"] and r["p_value"] is not None for r in rows)
    holm_note = (f"Holm step-down over {plural(n_gating, 'gating metric')} with a p-value"
                 + (f"; {plural(n_shown, 'metric')} shown but not gating, adjusted among themselves"
                    if metrics else ""))

    code, reason = _exit(rows, model_map, mismatches, any_shared, allow_mismatch, failed, min_effect, alpha, b, n)
    return RunComparison(base=side(b), new=side(n), pairs=model_map, confidence=confidence, alpha=alpha,
                         min_effect=min_effect, metrics_selected=list(metrics) if metrics else None,
                         allow_mismatch=allow_mismatch, holm=holm_note,
                         metrics=[MetricComparison(**r) for r in rows],
                         items_only_in_base=sorted(base_keys - new_keys), items_only_in_new=sorted(new_keys - base_keys),
                         mismatches=mismatches, not_checked=not_checked, changes=changes, worse=worse,
                         better=better, failed=failed,
                         exit_code=code, reason=reason)


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 metric``, ``3 metrics``."""
    return f"{n} {word if n == 1 else words or word + 's'}"


def _exit(rows: list[dict[str, Any]], model_map: dict[str, str], mismatches: list[Mismatch], any_shared: bool,
          allow_mismatch: bool, failed: int, min_effect: float, alpha: float, b: RunSource,
          n: RunSource) -> tuple[int, str]:
    """The gate's exit code and its one-line reason (module docstring)."""
    if not model_map:
        return 2, (f"no model of BASE ({', '.join(b.models) or 'none'}) pairs with one of NEW "
                   f"({', '.join(n.models) or 'none'}); name the pairs with --pair BASE_NAME=NEW_NAME")
    blocking = [m for m in mismatches if m.kind in ("definition", "dataset")]
    if not rows:
        why = f" ({blocking[0].message})" if blocking else ""
        return 2, f"the runs have no item-level metric in common for the paired models{why}"
    if not any_shared:
        return 2, "the runs share no scored item: the comparison above is unpaired and cannot gate"
    if not any(r["n_shared"] for r in rows):
        return 2, "no metric has a value on both sides of any shared item"
    if blocking and not allow_mismatch:
        return 2, (f"{plural(len(blocking), 'mismatch', 'mismatches')} between the runs ({blocking[0].message}); nothing gated: compare "
                   "with --allow-mismatch to gate anyway")
    if failed:
        worst = [f"{r['family']}/{r['metric']} ({r['base_model']})" for r in rows if r["fails_gate"]]
        return 1, (f"{plural(failed, 'metric')} significantly worse after Holm (alpha {alpha:g}) beyond --min-effect "
                   f"{min_effect:g}: {', '.join(worst[:5])}" + (" ..." if len(worst) > 5 else ""))
    gated = sum(r["gates"] and r["p_value"] is not None for r in rows)
    return 0, f"no gating metric significantly worse after Holm (alpha {alpha:g}) over {plural(gated, 'metric')}"


def _top_changes(b: RunSource, n: RunSource, family: str, metric: str, bm: str, nm: str, bv: dict[str, float],
                 nv: dict[str, float], shared: list[str], k: int, higher_is_better: bool | None) -> list[ItemChange]:
    """The ``k`` shared items whose value changed most, with both outputs.

    Largest |NEW - BASE| first (non-zero only); among equal changes, those in the worse direction first.
    """
    def worse_first(key: str) -> tuple[float, bool, str]:
        change = nv[key] - bv[key]
        return -abs(change), higher_is_better is not None and (change > 0) == higher_is_better, key

    moved = sorted((x for x in shared if round(nv[x], 12) != round(bv[x], 12)), key=worse_first)[:k]
    out = []
    for key in moved:
        stored = item_of(b, key) or item_of(n, key)
        item = b.items.get(stored or "", {}) or n.items.get(stored or "", {})
        out.append(ItemChange(family=family, metric=metric, base_model=bm, new_model=nm, item=key,
                              base_value=bv[key], new_value=nv[key], change=nv[key] - bv[key],
                              question=item.get("input"), target=item.get("target"),
                              base_output=b.output(bm, stored) if stored else None,
                              new_output=n.output(nm, stored) if stored else None))
    return out
