"""A run read chunk by chunk: a run with more items than ``results.CHUNK_ITEMS`` is scored by the
behaviour family and written to the report one chunk of whole items at a time, never loaded whole,
and gives the same scores and outputs as the same run read at once."""

from __future__ import annotations

import csv
import json

import pytest

import reasonscope.pipeline.runner as runner_module
import reasonscope.storage.run_data as results
from reasonscope.pipeline.run_outcome import tally
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import parse_plan
from reasonscope.storage.store import Store
from tolerance import assert_same_up_to_rounding


def plan(out, tiny_nli, qs):
    return parse_plan({
        "experiment": {"name": "chunks", "seed": 3, "output_dir": str(out)},
        "models": [{"spec": "mock/reasoner", "name": "mock-a"},
                   {"spec": "mock/reasoner", "name": "mock-b", "options": {"accuracy": 0.4, "seed": 5}}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 3},
                     {"name": "qs", "format": "jsonl", "path": str(qs)}],
        "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "hf", "model": str(tiny_nli)},
                                  "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": 200}})


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, tiny_nli):
    """The same plan run twice: read at once (11 items, under CHUNK_ITEMS) and read in chunks of 4 items,
    with the whole-run reader disabled so that nothing can read the chunked run at once."""
    root = tmp_path_factory.mktemp("chunks")
    qs = root / "qs.jsonl"
    qs.write_text("".join(json.dumps({"id": f"q{i}", "input": f"What is {i} + {i}?", "target": 2 * i,
                                      "answer_type": "number"}) + "\n" for i in range(2)))
    whole = Runner(plan(root / "whole", tiny_nli, qs), show_progress=False).run().run_dir
    sizes: list[int] = []
    between = Store.run_generations_between

    def counted(self, run_id, first, last):
        rows = between(self, run_id, first, last)
        sizes.append(len({(r["dataset"], r["item_id"]) for r in rows}))
        return rows

    def refused(*args, **kwargs):
        raise AssertionError("a run larger than CHUNK_ITEMS was loaded whole")

    planned: list[int] = []
    plan_requests = runner_module.plan_requests

    def counted_plan(model, datasets, plan):
        planned.append(sum(len(items) for items in datasets.values()))
        return plan_requests(model, datasets, plan)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(results, "CHUNK_ITEMS", 4)
        mp.setattr(results, "load_run_data", refused)
        mp.setattr(Store, "run_generations_between", counted)
        mp.setattr(runner_module, "plan_requests", counted_plan)
        chunked = Runner(plan(root / "chunked", tiny_nli, qs), show_progress=False).run().run_dir
    return whole, chunked, sizes, planned


def stored_scores(run_dir):
    store = Store.open_existing(run_dir)
    try:
        run_id = store.run()["run_id"]
        scores = sorted((s.family, s.metric, s.model, s.item_id or "", json.dumps(s.value), s.reason or "",
                         json.dumps(s.details, sort_keys=True)) for s in store.scores(run_id))
        return scores, tally(store, run_id)
    finally:
        store.close()


def test_the_chunked_run_is_planned_and_read_a_chunk_at_a_time(two_runs):
    _, _, sizes, planned = two_runs
    # 11 items in chunks of 4: requests planned and sent per chunk for each of the two models, the run read
    # once for scoring and once for samples.jsonl and the page
    assert planned == [4, 4, 3, 4, 4, 3]
    assert sizes == [4, 4, 3, 4, 4, 3]


def test_item_parts_and_the_request_count(tiny_nli, tmp_path):
    from reasonscope.data.synthetic import synthetic_items
    from reasonscope.models.registry import usable_models

    items = synthetic_items(2, seed=1)  # 6 items with paraphrases
    datasets = {"a": items[:5], "b": [], "c": items[5:]}
    parts = list(runner_module.item_parts(datasets, 2))
    assert [{ds: [it.id for it in lst] for ds, lst in p.items()} for p in parts] == [
        {"a": [items[0].id, items[1].id]}, {"a": [items[2].id, items[3].id]}, {"a": [items[4].id], "c": [items[5].id]}]
    assert list(runner_module.item_parts({"a": []}, 2)) == [{}]
    qs = tmp_path / "qs.jsonl"
    qs.write_text("")
    p = plan(tmp_path, tiny_nli, qs)
    model = usable_models(p.models)[0][0]
    assert runner_module.request_count(datasets, p) == len(runner_module.plan_requests(model, datasets, p)) == 6 * 3


def test_chunks_give_the_same_scores_as_the_whole_run(two_runs):
    whole, chunked = two_runs[:2]
    scores_whole, tally_whole = stored_scores(whole)
    scores_chunked, tally_chunked = stored_scores(chunked)
    # per model: 7 item metrics on 11 items, then 9 estimates (6 metrics and the 3 ES columns) and 7 strategies
    assert len(scores_whole) == 2 * (11 * 7 + 9 + 7)
    # the embedding and NLI scores come from batches of another composition: the last float32 digits differ
    assert_same_up_to_rounding(scores_chunked, scores_whole)
    assert tally_chunked == tally_whole
    # 9 synthetic items with 2 samples and 1 paraphrase, 2 items of qs.jsonl with 2 samples (no paraphrase)
    assert tally_whole["mock-a"].requested == 9 * 3 + 2 * 2 == tally_whole["mock-a"].answered
    behavior = [json.loads((d / "summary.json").read_text())["behavior"] for d in (whole, chunked)]
    for b in behavior:
        b["backends"].pop("score_cache")  # cache counters depend on how the inputs were batched
    assert_same_up_to_rounding(behavior[0], behavior[1])
    assert behavior[0]["metrics"]["mock-a"]["LS"]["n"] == 11  # the NLI did score every chunk
    assert set(behavior[0]["per_dataset"]["mock-b"]) == {"qs", "syn"}


def test_chunks_give_the_same_outputs_as_the_whole_run(two_runs):
    whole, chunked = two_runs[:2]
    samples = [[json.loads(line) for line in (d / "samples.jsonl").read_text().splitlines()] for d in (whole, chunked)]
    for row in samples[0] + samples[1]:
        assert row.pop("latency_s") >= 0  # the mock's measured time, different in each run
    assert len(samples[0]) == 2 * 31
    assert_same_up_to_rounding(samples[0], samples[1])
    first = samples[0][:5]
    # item by item, then model, variant, sample; the primary generation carries the item's scores
    assert [(r["dataset"], r["item_id"], r["model"], r["variant"], r["sample"]) for r in first] == [
        ("qs", "q0", "mock-a", "original", 0), ("qs", "q0", "mock-a", "original", 1),
        ("qs", "q0", "mock-b", "original", 0), ("qs", "q0", "mock-b", "original", 1),
        ("qs", "q1", "mock-a", "original", 0)]
    assert set(first[0]["scores"]) == {f"behavior.{m}" for m in results_metrics()} and "scores" not in first[1]
    pages = [(d / "report.html").read_text() for d in (whole, chunked)]
    items = [page[page.index('<h2 id="items">'):] for page in pages]
    assert items[0] == items[1] and items[0].count('<details class="item"') == 11
    summaries = [json.loads((d / "summary.json").read_text()) for d in (whole, chunked)]
    assert summaries[0]["generations"] == summaries[1]["generations"] == {
        "total": 62, "missing": 0, "missing_by_model": {}, "failed": 0, "imported": 0}
    tables = [sorted((d / "tables").iterdir()) for d in (whole, chunked)]
    assert [p.name for p in tables[0]] == [p.name for p in tables[1]]
    rows = [[list(csv.reader(p.read_text().splitlines())) for p in t] for t in tables]
    assert_same_up_to_rounding(rows[0], rows[1])


def results_metrics():
    from reasonscope.behavior.scoring import ITEM_METRICS

    return ITEM_METRICS


def test_loaded_items_are_released_before_scoring(tmp_path, monkeypatch):
    """The items are in the store once generation ends; scoring (the run's peak, models loaded) reads them
    back from there, so the loaded ones must be gone by then."""
    import gc
    import weakref

    loaded: list[weakref.ref] = []
    load_datasets = Runner.load_datasets

    def recorded(self):
        datasets, bad = load_datasets(self)
        loaded.extend(weakref.ref(it) for items in datasets.values() for it in items)
        return datasets, bad

    alive: list[int] = []
    score = Runner._score

    def checked(self, *args, **kwargs):
        gc.collect()
        alive.append(sum(r() is not None for r in loaded))
        return score(self, *args, **kwargs)

    monkeypatch.setattr(Runner, "load_datasets", recorded)
    monkeypatch.setattr(Runner, "_score", checked)
    summary = Runner(parse_plan({
        "experiment": {"name": "release", "seed": 1, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner"}], "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
        "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": 100}}), show_progress=False).run()
    assert summary.outcome.code == 0 and len(loaded) == 6 and alive == [0]
