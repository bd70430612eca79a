"""``reasonscope compare``: hand-computed paired differences, p-values, Holm, verdicts and the gate's exit codes.

Runs are written straight into stores (:func:`make_run`) so every value is known; ``test_compare_cli.py``
covers the command line, the outputs and the bad inputs on real mock runs.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from reasonscope.compare import CompareError, compare_runs
from reasonscope.compare.metrics import resolve_spec, selector_matches, settings_differences
from reasonscope.storage.store import Store
from reasonscope.types import Completion, Item, Score

BEHAVIOR = {"nli": {"backend": "none", "model": "nli-a", "batch_size": 16}, "samples": 1}


def make_run(run_dir, scores, *, items=None, config=None, outputs=None, seed=0, dataset="ds", finish=True,
             template=None, runtime=None):
    """A run folder whose store holds ``scores``: ``{(family, metric, model): {item id: value}}``.

    Items are ``dataset/<id>`` with input ``q<id>`` unless ``items`` (id -> Item fields) says otherwise;
    ``outputs``: ``{(model, id): text}`` stored as the model's completion of the item, its request recording
    ``template`` (one for every model, or ``{model: template}``; None: no template, as older stores) and
    ``runtime`` (None: none recorded, as a torch model's requests).
    """
    store = Store(run_dir)
    run_id = store.start_run(kind="run", config=config or {"families": {"behavior": BEHAVIOR}}, seed=seed)
    ids = sorted({i for values in scores.values() for i in values} | set(items or {}))
    store.put_items(dataset, [Item(**{"id": i, "input": f"q{i}", "target": 1, "group": dataset,
                                      **(items or {}).get(i, {})}) for i in ids])
    rows = [Score(family=f, metric=m, model=mo, item_id=f"{dataset}/{i}", value=v)
            for (f, m, mo), values in scores.items() for i, v in values.items()]
    store.put_scores(run_id, rows)
    links = []
    for (model, i), text in (outputs or {}).items():
        key = f"k-{model}-{i}-{seed}"
        tmpl = template.get(model) if isinstance(template, dict) else template
        request = {**({"template": tmpl} if tmpl else {}), **({"runtime": runtime} if runtime else {})}
        store.put_completion(key, provider="mock", model_id=model, request=request, completion=Completion(text=text))
        links.append((run_id, model, dataset, i, "original", 0, key, 64))
    if links:
        store.link(links)
    if finish:
        store.finish_run(run_id)
    store.close()
    return run_dir


def shares(pattern: str) -> dict[str, float]:
    """``"1101"`` -> {"i00": 1.0, "i01": 1.0, "i02": 0.0, "i03": 1.0}."""
    return {f"i{k:02d}": float(c) for k, c in enumerate(pattern)}


# Ten items. CQ: 9 discordant pairs all BASE-right/NEW-wrong, 1 concordant right: McNemar exact two-sided
# p = 2 * 0.5^9 = 0.00390625, difference (0 - 9) / 10 = -0.9. RS: 7 BASE-only, 1 NEW-only, 2 concordant:
# p = 2 * (1 + 8) / 2^8 = 0.0703125, difference (1 - 7) / 10 = -0.6.
CQ_BASE, CQ_NEW = "1111111111", "0000000001"
RS_BASE, RS_NEW = "1111111000", "0000000100"


@pytest.fixture
def pair(tmp_path):
    base = make_run(tmp_path / "base", {("behavior", "CQ", "m"): shares(CQ_BASE),
                                        ("behavior", "RS", "m"): shares(RS_BASE)})
    new = make_run(tmp_path / "new", {("behavior", "CQ", "m"): shares(CQ_NEW),
                                      ("behavior", "RS", "m"): shares(RS_NEW)}, seed=1)
    return base, new


def test_shares_get_the_exact_mcnemar_p_holm_and_the_gate(pair):
    res = compare_runs(*pair)
    cq, rs = (next(r for r in res.metrics if r.metric == k) for k in ("CQ", "RS"))
    assert cq.kind == rs.kind == "share" and cq.paired
    assert cq.n_shared == 10 and cq.base_mean == 1.0 and cq.new_mean == pytest.approx(0.1)
    assert cq.difference == pytest.approx(-0.9)
    assert cq.p_value == pytest.approx(2 * 0.5 ** 9)
    assert rs.difference == pytest.approx(-0.6) and rs.p_value == pytest.approx(18 / 256)
    # Holm over the two: 2 * 0.00390625, then max(that, 1 * 0.0703125)
    assert cq.p_holm == pytest.approx(0.0078125) and rs.p_holm == pytest.approx(0.0703125)
    assert cq.verdict == "worse" and rs.verdict == "no change"
    assert cq.interval == "paired-newcombe-score-cc" and cq.ci_high < 0
    assert "exact" in cq.test
    assert cq.fails_gate and not rs.fails_gate
    assert (res.exit_code, res.failed, res.worse, res.better) == (1, 1, 1, 0)
    assert "behavior/CQ (m)" in res.reason


def test_min_effect_reports_but_does_not_fail(pair):
    res = compare_runs(*pair, min_effect=0.95)
    cq = next(r for r in res.metrics if r.metric == "CQ")
    assert cq.verdict == "worse" and not cq.fails_gate
    assert res.exit_code == 0
    assert compare_runs(*pair, min_effect=0.85).exit_code == 1


def test_metrics_selects_what_gates_and_holm_runs_per_group(pair):
    res = compare_runs(*pair, metrics=["RS"])
    cq, rs = (next(r for r in res.metrics if r.metric == k) for k in ("CQ", "RS"))
    assert rs.gates and not cq.gates
    assert rs.p_holm == pytest.approx(18 / 256)  # alone in the gating group
    assert cq.p_holm == pytest.approx(2 * 0.5 ** 9)  # alone among the shown metrics
    assert cq.verdict == "worse" and not cq.fails_gate
    assert res.exit_code == 0
    assert compare_runs(*pair, metrics=["behavior/CQ"]).exit_code == 1
    assert compare_runs(*pair, metrics=["behavior"]).exit_code == 1
    with pytest.raises(CompareError, match=r"--metrics XX: no such metric in both runs .*behavior/CQ"):
        compare_runs(*pair, metrics=["XX"])


def test_better_is_better_and_a_reversed_pair_passes(pair):
    base, new = pair
    res = compare_runs(new, base)
    cq = next(r for r in res.metrics if r.metric == "CQ")
    assert cq.difference == pytest.approx(0.9) and cq.verdict == "better"
    assert res.exit_code == 0 and res.better == 1


def test_bounded_values_exact_sign_flip_and_effect_size(tmp_path):
    # d = (0.1, 0.2, 0.3, -0.1): on the 0.1 lattice, S = +-1 +-2 +-3 +-1 >= 5 in 3 of 16 patterns: p = 6 / 16
    base = make_run(tmp_path / "b", {("behavior", "SS", "m"): {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5}})
    new = make_run(tmp_path / "n", {("behavior", "SS", "m"): {"a": 0.6, "b": 0.7, "c": 0.8, "d": 0.4}})
    row = compare_runs(base, new).metrics[0]
    assert row.kind == "bounded" and row.value_range == (0.0, 1.0)
    assert row.difference == pytest.approx(0.125)
    assert row.p_value == pytest.approx(0.375)
    d = [0.1, 0.2, 0.3, -0.1]
    sd = math.sqrt(sum((x - 0.125) ** 2 for x in d) / 3)
    assert row.effect_size == pytest.approx(0.125 / sd)
    assert row.ci_low < 0.125 < row.ci_high and row.verdict == "no change"


def test_direction_comes_from_the_catalogue(tmp_path):
    # attack success: higher = more fragile reasoning, so a rise is worse
    base = make_run(tmp_path / "b", {("attack", "token.success", "m"): shares("0000000000")},
                    config={"families": {}})
    new = make_run(tmp_path / "n", {("attack", "token.success", "m"): shares("1111111111")},
                   config={"families": {}})
    row = compare_runs(base, new).metrics[0]
    assert row.spec == "success" and row.higher_is_better is False
    assert row.difference == 1.0 and row.verdict == "worse"


def test_stored_keys_resolve_to_catalogue_entries():
    assert resolve_spec("behavior", "CQ").key == "CQ"
    assert resolve_spec("evidence", "coverage_contradict:exact").higher_is_better is False
    assert resolve_spec("attack", "embedding.success").key == "success"
    assert resolve_spec("attributes", "judge.faithfulness").key == "score"
    assert resolve_spec("behavior", "made_up") is None
    assert resolve_spec("not-installed", "x") is None
    assert selector_matches("coverage_support", "evidence", "coverage_support:exact",
                            resolve_spec("evidence", "coverage_support:exact"))
    assert not selector_matches("attack/CQ", "behavior", "CQ", None)


def test_a_metric_without_direction_is_changed_not_worse(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "made_up", "m"): shares("1111111111")})
    new = make_run(tmp_path / "n", {("behavior", "made_up", "m"): shares("0000000000")})
    res = compare_runs(base, new)
    assert res.metrics[0].verdict == "changed" and res.metrics[0].higher_is_better is None
    assert res.exit_code == 0


def test_items_in_one_run_only_are_counted_and_listed(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): {"x1": 1.0, "x2": 1.0, "x3": 0.0}})
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): {"x2": 0.0, "x3": 0.0, "x4": 1.0}})
    res = compare_runs(base, new)
    row = res.metrics[0]
    assert (row.n_shared, row.only_in_base, row.only_in_new) == (2, 1, 1)
    assert row.base_mean == 0.5 and row.new_mean == 0.0 and row.difference == -0.5
    assert res.items_only_in_base == ["ds/x1"] and res.items_only_in_new == ["ds/x4"]


def test_nothing_shared_is_an_unpaired_comparison_and_exit_2(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): {"a1": 1.0, "a2": 1.0, "a3": 0.0}})
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): {"b1": 0.0, "b2": 0.0, "b3": 1.0}})
    res = compare_runs(base, new)
    row = res.metrics[0]
    assert not row.paired and row.n_shared == 0 and row.difference == pytest.approx(1 / 3 - 2 / 3)
    assert "unpaired" in row.note and "permutation" in row.test
    assert res.exit_code == 2 and "share no scored item" in res.reason and not row.fails_gate


def test_models_pair_by_name_by_the_lone_pair_or_by_option(tmp_path):
    one = {("behavior", "CQ", "old"): shares(CQ_BASE)}
    base = make_run(tmp_path / "b", one)
    new = make_run(tmp_path / "n", {("behavior", "CQ", "new"): shares(CQ_NEW)})
    res = compare_runs(base, new)
    assert res.pairs == {"old": "new"} and res.exit_code == 1
    two_b = make_run(tmp_path / "b2", {("behavior", "CQ", "x"): shares(CQ_BASE), ("behavior", "CQ", "y"): shares(CQ_BASE)})
    two_n = make_run(tmp_path / "n2", {("behavior", "CQ", "u"): shares(CQ_NEW), ("behavior", "CQ", "v"): shares(CQ_BASE)})
    res = compare_runs(two_b, two_n)
    assert res.pairs == {} and res.exit_code == 2 and "--pair" in res.reason
    assert [m.kind for m in res.mismatches] == ["models"] * 4
    res = compare_runs(two_b, two_n, pairs={"x": "u", "y": "v"})
    assert res.pairs == {"x": "u", "y": "v"} and res.exit_code == 1
    assert [(r.base_model, r.verdict) for r in res.metrics] == [("x", "worse"), ("y", "no change")]
    with pytest.raises(CompareError, match=r"b2/store.sqlite: --pair z=u: BASE has no model 'z' \(it has x, y\)"):
        compare_runs(two_b, two_n, pairs={"z": "u"})


def test_a_family_whose_settings_differ_is_flagged_and_blocks_unless_allowed(pair, tmp_path):
    base, _ = pair
    other = {"families": {"behavior": {**BEHAVIOR, "nli": {**BEHAVIOR["nli"], "model": "nli-b", "batch_size": 4}}}}
    new = make_run(tmp_path / "other", {("behavior", "CQ", "m"): shares(CQ_NEW),
                                        ("behavior", "RS", "m"): shares(RS_NEW)}, config=other)
    res = compare_runs(base, new)
    assert [(m.kind, m.what, m.base, m.new) for m in res.mismatches] == [
        ("definition", "families.behavior.nli.model", "nli-a", "nli-b")]  # batch_size is operational
    assert all(r.definition_differs for r in res.metrics)
    assert res.exit_code == 2 and "--allow-mismatch" in res.reason
    assert compare_runs(base, new, allow_mismatch=True).exit_code == 1
    assert settings_differences({"a": {"b": 1}}, {"a": {"b": 2}, "c": 3}) == [("a.b", 1, 2), ("c", None, 3)]


def test_a_setting_an_older_run_did_not_store_reads_as_its_default_not_a_mismatch(pair, tmp_path):
    # the registry's settings models, as the command passes them
    from reasonscope.cli.compare import _settings_model

    base, _ = pair  # its nli settings lack `runtime`, as runs written before the setting existed
    scores = {("behavior", "CQ", "m"): shares(CQ_NEW), ("behavior", "RS", "m"): shares(RS_NEW)}

    def with_nli(**nli):
        return {"families": {"behavior": {**BEHAVIOR, "nli": {**BEHAVIOR["nli"], **nli}}}}

    auto = make_run(tmp_path / "auto", scores, config=with_nli(runtime="auto"))
    assert compare_runs(base, auto, settings_models=_settings_model).mismatches == []
    assert [(m.what, m.base, m.new) for m in compare_runs(base, auto).mismatches] == [  # no model: as stored
        ("families.behavior.nli.runtime", None, "auto")]
    res = compare_runs(base, make_run(tmp_path / "torch", scores, config=with_nli(runtime="torch")),
                       settings_models=_settings_model)
    assert [(m.what, m.base, m.new) for m in res.mismatches] == [("families.behavior.nli.runtime", "auto", "torch")]
    assert res.mismatches[0].message == (
        "behavior: families.behavior.nli.runtime is 'auto' in BASE and 'torch' in NEW (BASE did not store it: the "
        "default): its metrics are not computed the same way") and res.exit_code == 2


def test_a_setting_without_a_default_missing_from_a_run_is_still_a_mismatch(tmp_path):
    from reasonscope.attributes.settings import AttributesConfig

    scores = {("attributes", "judge.faithfulness", "m"): shares("1100")}
    judges = [{"name": "j", "spec": "openai/gpt-4o"}]
    base = make_run(tmp_path / "b", scores, config={"families": {"attributes": {"judges": judges}}})
    new = make_run(tmp_path / "n", scores, config={"families": {"attributes": {"judges": [{"name": "j"}]}}})
    res = compare_runs(base, new, settings_models={"attributes": AttributesConfig}.__getitem__)
    assert [(m.what, m.base, m.new) for m in res.mismatches] == [
        ("families.attributes.judges.j.spec", "openai/gpt-4o", None)]
    assert "did not store" not in res.mismatches[0].message and res.exit_code == 2


def test_items_with_one_id_but_other_content_are_left_out_and_block(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): shares(CQ_BASE)})
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): shares(CQ_NEW)}, items={"i03": {"input": "changed"}})
    res = compare_runs(base, new)
    assert res.metrics[0].n_shared == 9
    assert [(m.kind, m.what, m.base) for m in res.mismatches] == [("dataset", "ds", 1)]
    assert res.exit_code == 2
    assert compare_runs(base, new, allow_mismatch=True).exit_code == 1


def test_different_datasets_are_refused_naming_the_store(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): shares(CQ_BASE)})
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): shares(CQ_NEW)}, dataset="other")
    with pytest.raises(CompareError, match=r"n/store.sqlite: NEW holds the datasets other, BASE .* holds ds: runs "
                                           "of different datasets cannot be compared"):
        compare_runs(base, new)


def test_clustered_items_are_averaged_per_cluster(tmp_path):
    # clusters {a, b} and {c}: cluster differences (-1 + 0) / 2 = -0.5 and -1: mean -0.75 over 2 clusters
    items = {"a": {"metadata": {"cluster": "p1"}}, "b": {"metadata": {"cluster": "p1"}},
             "c": {"metadata": {"cluster": "p2"}}}
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): {"a": 1.0, "b": 1.0, "c": 1.0}}, items=items)
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): {"a": 0.0, "b": 1.0, "c": 0.0}}, items=items)
    row = compare_runs(base, new).metrics[0]
    assert row.clustered and row.n_shared == 2
    assert row.difference == pytest.approx(-0.75) and row.base_mean == 1.0 and row.new_mean == pytest.approx(0.25)
    assert row.p_value == pytest.approx(0.5)  # two clusters, both negative: 2 of 4 sign patterns as extreme


def test_select_run_by_hand():
    from reasonscope.storage.store import select_run

    runs = [{"run_id": "r1", "status": "finished"}, {"run_id": "r2", "status": "finished"},
            {"run_id": "r3", "status": "interrupted"}]
    assert select_run(runs, None)["run_id"] == "r2"  # the latest finished, not the latest
    assert select_run(runs[2:], None)["run_id"] == "r3"  # none finished: the latest
    assert select_run(runs, "r1")["run_id"] == "r1" and select_run(runs, "nope") is None
    assert select_run([], None) is None and select_run([], "r1") is None


def test_compare_and_the_store_pick_the_same_run(tmp_path):
    """Of a finished run and a later interrupted one, compare reads the run Store.run() returns (the finished
    one); a run id picks that run in both; an unknown one is each side's own error."""
    from reasonscope.compare.source import open_run

    folder = make_run(tmp_path / "r", {("behavior", "CQ", "m"): {"a": 1.0}})
    store = Store(folder)
    failed = store.start_run(kind="run", config={}, seed=1)
    store.finish_run(failed, status="interrupted")
    first = store.runs()[0]["run_id"]
    picked = store.run()["run_id"]
    assert picked == first != failed
    with pytest.raises(LookupError, match=r"store\.sqlite: no run 'nope'$"):
        store.run("nope")
    store.close()
    with open_run(folder) as src:
        assert src.run["run_id"] == picked
    with open_run(folder, run_id=failed) as src:
        assert src.run["run_id"] == failed and src.run["status"] == "interrupted"
    with pytest.raises(CompareError, match=rf"no run 'nope' \(the store holds {first}, {failed}\)"), \
            open_run(folder, run_id="nope"):
        pass


def test_cluster_means_are_the_stats_packages():
    """compare's means per cluster are stats' (one implementation), with the values compare's own loop gave:
    left-to-right sums over the count, clusters in first-seen order."""
    from reasonscope.compare.core import _cluster_means
    from reasonscope.stats.bootstrap import cluster_means

    values, labels = [0.1, 4.0, 0.2, 1.0, 0.3], ["p", "q", "p", "q", "p"]
    assert _cluster_means(values, labels).tolist() == cluster_means(values, labels) == [0.6000000000000001 / 3, 2.5]
    assert cluster_means(values, labels)[0] == 0.20000000000000004  # (0.1 + 0.2) + 0.3, then / 3
    assert _cluster_means(values, None).tolist() == values
    assert cluster_means([1.0, None, math.nan, 3.0], ["a", "a", "b", "b"]) == [1.0, 3.0]  # missing values left out
    with pytest.raises(ValueError, match=r"clusters: expected one label per value \(2\), got 1"):
        cluster_means([1.0, 2.0], ["a"])


def test_the_items_that_changed_most_carry_both_outputs(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "SS", "m"): {"a": 0.9, "b": 0.5, "c": 0.5}},
                    outputs={("m", "a"): "base says <b>", ("m", "b"): "base b"})
    new = make_run(tmp_path / "n", {("behavior", "SS", "m"): {"a": 0.1, "b": 0.6, "c": 0.5}},
                   outputs={("m", "a"): "new says", ("m", "b"): "new b"}, seed=1)
    res = compare_runs(base, new, top_items=5)
    assert [(c.item, round(c.change, 6)) for c in res.changes] == [("ds/a", -0.8), ("ds/b", 0.1)]
    first = res.changes[0]
    assert (first.base_output, first.new_output, first.question, first.target) == ("base says <b>", "new says",
                                                                                   "qa", 1)


def test_bad_options_are_compare_errors(pair):
    with pytest.raises(CompareError, match="--min-effect: expected a number >= 0, got -1"):
        compare_runs(*pair, min_effect=-1)


@pytest.mark.parametrize("first_import", ["import reasonscope", "from reasonscope.compare import compare_runs"])
def test_the_package_is_callable_whatever_was_imported_first(pair, first_import):
    base, new = pair
    code = (f"{first_import}\nimport sys, reasonscope\n"
            f"r = reasonscope.compare({str(base)!r}, {str(new)!r}, metrics=['CQ'])\n"
            "from reasonscope.compare import compare_runs, RunComparison\n"
            f"s = compare_runs({str(base)!r}, {str(new)!r})\n"
            "assert isinstance(r, RunComparison) and reasonscope.compare is sys.modules['reasonscope.compare']\n"
            "print(r.exit_code, s.exit_code, callable(reasonscope.compare))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "1", "True"]


def test_among_equal_changes_the_worse_ones_come_first(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): {"a": 0.0, "b": 1.0, "c": 1.0}})
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): {"a": 1.0, "b": 0.0, "c": 1.0}})
    assert [(c.item, c.change) for c in compare_runs(base, new).changes] == [("ds/b", -1.0), ("ds/a", 1.0)]
    assert [c.item for c in compare_runs(base, new, top_items=1).changes] == ["ds/b"]


def test_equal_scores_from_different_float_paths_pair_as_equal(tmp_path):
    # 0.1 + 0.2 != 0.3 in floating point: a difference of 5.6e-17 is no difference
    base = make_run(tmp_path / "b", {("attributes", "judge.grammar", "m"): {"a": 0.3, "b": 0.5, "c": 0.9}},
                    config={"families": {}})
    new = make_run(tmp_path / "n", {("attributes", "judge.grammar", "m"): {"a": 0.1 + 0.2, "b": 0.6, "c": 0.9}},
                   config={"families": {}})
    row = compare_runs(base, new).metrics[0]
    assert row.difference == pytest.approx(0.1 / 3) and row.p_value == 1.0  # one non-zero pair of three: 2 x 1/2
    assert [c.item for c in compare_runs(base, new).changes] == ["ds/b"]
