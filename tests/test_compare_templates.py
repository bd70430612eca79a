"""``reasonscope compare`` and prompt templates: the version each generation was made with, and mismatches.

Every stored generation records its prompt template in the stored request (``template``), outside the cache
key; ``compare`` flags two runs whose templates differ as a definition mismatch (exit 2 unless
``--allow-mismatch``), and says where a store from before templates were recorded could not be checked.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from markupsafe import escape
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.compare import compare_runs, render_html, render_markdown
from reasonscope.compare.metrics import settings_differences
from reasonscope.execution.calls import generate_pending, planned_request
from reasonscope.models.registry import create_model
from reasonscope.plan import ModelConfig
from reasonscope.storage.store import Store
from reasonscope.types import Completion, Item, Score
from test_compare import BEHAVIOR, CQ_BASE, CQ_NEW, make_run, shares

ANSWERS = {(m, f"i{k:02d}"): f"Answer: {k}" for m in ("m",) for k in range(10)}


def run_pair(tmp_path, base_template, new_template, **kw):
    """BASE (CQ all right) and NEW (CQ 9 of 10 wrong), their answers made with the given templates."""
    base = make_run(tmp_path / "base", {("behavior", "CQ", "m"): shares(CQ_BASE)}, outputs=ANSWERS,
                    template=base_template, **kw)
    new = make_run(tmp_path / "new", {("behavior", "CQ", "m"): shares(CQ_NEW)}, outputs=ANSWERS,
                   template=new_template, seed=1, **kw)
    return base, new


def test_runs_differing_only_in_prompt_template_block_the_gate(tmp_path):
    base, new = run_pair(tmp_path, "qa-v1", "qa-v2")
    res = compare_runs(base, new)
    assert [(m.kind, m.family, m.what, m.base, m.new) for m in res.mismatches] == [
        ("definition", "behavior", "prompt template (answers)", "qa-v1", "qa-v2")]
    assert res.mismatches[0].message.startswith("prompt template qa-v1 -> qa-v2 (behavior, answers)")
    assert res.exit_code == 2 and "prompt template qa-v1 -> qa-v2 (behavior, answers)" in res.reason
    assert all(r.definition_differs for r in res.metrics)
    assert res.base.templates == {"answers": ["qa-v1"]} and res.new.templates == {"answers": ["qa-v2"]}
    assert res.not_checked == []


def test_answers_made_on_another_runtime_block_the_gate(tmp_path):
    """The embedded model on torch in BASE and on llama.cpp in NEW (what ``runtime: auto`` does where
    llama-cpp-python is installed): a definition mismatch, though the settings say ``auto`` in both."""
    base, new = run_pair(tmp_path, "qa-v1", "qa-v1", runtime=None)
    new = make_run(tmp_path / "new2", {("behavior", "CQ", "m"): shares(CQ_NEW)}, outputs=ANSWERS, template="qa-v1",
                   runtime="llama-cpp", seed=1)
    res = compare_runs(base, new)
    assert [(m.kind, m.family, m.what, m.base, m.new) for m in res.mismatches] == [
        ("definition", "behavior", "model runtime (answers)", "torch", "llama-cpp")]
    assert res.mismatches[0].message == ("model runtime torch -> llama-cpp (behavior, answers): its metrics are not "
                                         "computed by the same model code")
    assert res.exit_code == 2
    same = make_run(tmp_path / "new3", {("behavior", "CQ", "m"): shares(CQ_NEW)}, outputs=ANSWERS,
                    template="qa-v1", runtime="llama-cpp", seed=2)
    assert compare_runs(new, same).mismatches == []  # llama.cpp on both sides
    assert compare_runs(base, run_pair(tmp_path / "pair", "qa-v1", "qa-v1")[1]).mismatches == []  # torch on both


def test_allow_mismatch_compares_and_still_lists_the_template_mismatch(tmp_path):
    base, new = run_pair(tmp_path, "qa-v1", "qa-v2")
    res = compare_runs(base, new, allow_mismatch=True)
    assert res.exit_code == 1 and res.metrics[0].verdict == "worse"  # CQ 1.0 -> 0.1, gated
    assert [m.what for m in res.mismatches] == ["prompt template (answers)"]
    line = "mismatch (definition): prompt template qa-v1 -> qa-v2 (behavior, answers)"
    assert line in render_markdown(res) and str(escape(line)) in render_html(res)  # -> as -&gt;
    for args, code in (([], 2), (["--allow-mismatch"], 1)):
        out = CliRunner().invoke(app, ["compare", str(base), str(new), *args])
        assert out.exit_code == code and line in " ".join(out.output.split()), out.output
    data = json.loads(CliRunner().invoke(app, ["compare", str(base), str(new), "--format", "json"]).stdout)
    assert data["mismatches"][0]["what"] == "prompt template (answers)" and data["exit_code"] == 2


def test_same_template_is_no_mismatch(tmp_path):
    base, new = run_pair(tmp_path, "qa-v1", "qa-v1")
    res = compare_runs(base, new)
    assert res.mismatches == [] and res.not_checked == [] and res.exit_code == 1
    assert not any(r.definition_differs for r in res.metrics)


@pytest.mark.parametrize(("base_t", "new_t", "side"), [(None, "qa-v2", "BASE"), ("qa-v1", None, "NEW")])
def test_a_store_without_templates_is_noted_not_checked_and_blocks_nothing(tmp_path, base_t, new_t, side):
    base, new = run_pair(tmp_path, base_t, new_t)
    res = compare_runs(base, new)
    assert res.mismatches == [] and res.exit_code == 1
    assert res.not_checked == [f"prompt template not checked (behavior, answers): {side}: generations stored "
                               "without a template (by an older reasonscope)"]
    assert f"- {res.not_checked[0]}" in render_markdown(res)


def test_several_model_pairs_are_named_and_only_the_pair_that_differs(tmp_path):
    outputs = {(m, f"i{k:02d}"): "x" for m in ("a", "b") for k in range(10)}
    base = make_run(tmp_path / "b", {("behavior", "CQ", m): shares(CQ_BASE) for m in "ab"}, outputs=outputs,
                    template="qa-v1")
    new = make_run(tmp_path / "n", {("behavior", "CQ", m): shares(CQ_BASE) for m in "ab"}, outputs=outputs,
                   template={"a": "qa-v1", "b": "qa-v2"})
    res = compare_runs(base, new)
    assert [m.message.split(":")[0] for m in res.mismatches] == ["prompt template qa-v1 -> qa-v2 (behavior, answers, b)"]


def _judged_run(run_dir, template, judge_spec="mock/judge", concurrency=8, seed=0):
    """An attributes run whose item scores record the key of the judge's completion (as the family stores)."""
    judges = [{"name": "judge-a", "spec": judge_spec, "concurrency": concurrency, "max_retries": 8}]
    store = Store(run_dir)
    run_id = store.start_run(kind="run", config={"families": {"attributes": {"judges": judges}}}, seed=seed)
    store.put_items("ds", [Item(id=f"i{k}", input=f"q{k}", target=1) for k in range(4)])
    scores = []
    for k in range(4):
        key = f"judge-{k}-{template}"
        store.put_completion(key, provider="mock", model_id="judge", request={"template": template},
                             completion=Completion(text="{}"))
        scores.append(Score(family="attributes", metric="judge.grammar", model="m", item_id=f"ds/i{k}",
                            value=k / 4, details={"judges": {"judge-a": {"key": key, "score": k / 4}}}))
    store.put_scores(run_id, scores)
    store.finish_run(run_id)
    store.close()
    return run_dir


def test_the_attribute_judges_template_is_read_from_the_keys_its_scores_record(tmp_path):
    base = _judged_run(tmp_path / "b", "judge-attributes-v3")
    new = _judged_run(tmp_path / "n", "judge-attributes-v4", seed=1)
    res = compare_runs(base, new)
    assert res.base.templates == {"attributes.calls": ["judge-attributes-v3"]}
    assert [(m.family, m.what, m.base, m.new) for m in res.mismatches] == [
        ("attributes", "prompt template (scoring calls)", "judge-attributes-v3", "judge-attributes-v4")]
    assert res.exit_code == 2


def test_another_judge_model_is_flagged_and_its_operational_settings_are_not(tmp_path):
    base = _judged_run(tmp_path / "b", "judge-attributes-v3")
    new = _judged_run(tmp_path / "n", "judge-attributes-v3", judge_spec="mock/other", concurrency=2, seed=1)
    res = compare_runs(base, new)
    assert [(m.kind, m.what, m.base, m.new) for m in res.mismatches] == [
        ("definition", "families.attributes.judges.judge-a.spec", "mock/judge", "mock/other")]
    assert res.exit_code == 2
    assert settings_differences({"j": [{"name": "a", "t": 0}]}, {"j": [{"name": "a", "t": 1}]}) == [("j.a.t", 0, 1)]
    assert settings_differences({"j": [1, 2]}, {"j": [1, 3]}) == [("j", [1, 2], [1, 3])]


def _attack_run(run_dir, prompt, *, template_field, seed=0):
    """An attack run whose white-box records carry the prompt version (``prompt``, and ``template`` when new)."""
    store = Store(run_dir)
    run_id = store.start_run(kind="run", config={"families": {}, "models": [{"name": "m", "spec": "hf/tiny"}]},
                             seed=seed)
    store.put_items("ds", [Item(id=f"i{k}", input=f"q{k}", target=1) for k in range(4)])
    for k in range(4):
        request = {"item": f"ds/i{k}", "prompt": prompt, **({"template": prompt} if template_field else {})}
        store.put_completion(f"attack-{k}-{prompt}", provider="attack", model_id="hf/tiny", request=request,
                             completion=Completion(text="{}"), source="attack")
    store.put_scores(run_id, [Score(family="attack", metric="token.success", model="m", item_id=f"ds/i{k}",
                                    value=0.0) for k in range(4)])
    store.finish_run(run_id)
    store.close()
    return run_dir


def test_the_attack_records_prompt_is_read_even_from_records_without_template(tmp_path):
    base = _attack_run(tmp_path / "b", "matcha-answer-first-v1", template_field=False)
    new = _attack_run(tmp_path / "n", "matcha-answer-first-v2", template_field=True, seed=1)
    res = compare_runs(base, new)
    assert res.base.templates == {"attack.records": ["matcha-answer-first-v1"]}
    assert [m.message.split(":")[0] for m in res.mismatches] == [
        "prompt template matcha-answer-first-v1 -> matcha-answer-first-v2 (attack, records)"]


def test_a_family_that_does_not_score_answers_is_not_flagged_for_them(tmp_path):
    """evidence has its own requests: a change of the answers' template is behavior's, not evidence's."""
    def run(name, template, seed):
        store = Store(tmp_path / name)
        run_id = store.start_run(kind="run", config={"families": {}}, seed=seed)
        store.put_items("ds", [Item(id=f"i{k}", input=f"q{k}", target=1) for k in range(3)])
        links = []
        for k in range(3):
            for variant, tmpl in (("original", template), ("evidence", "race-v1")):
                key = f"{variant}-{k}-{tmpl}"
                store.put_completion(key, provider="mock", model_id="m", request={"template": tmpl},
                                     completion=Completion(text="x"))
                links.append((run_id, "m", "ds", f"i{k}", variant, 0, key, 64))
        store.link(links)
        store.put_scores(run_id, [Score(family=f, metric=metric, model="m", item_id=f"ds/i{k}", value=1.0)
                                  for k in range(3) for f, metric in (("behavior", "CQ"),
                                                                      ("evidence", "coverage_support:exact"))])
        store.finish_run(run_id)
        store.close()
        return tmp_path / name

    res = compare_runs(run("b", "qa-v1", 0), run("n", "qa-v2", 1))
    assert [(m.family, m.what) for m in res.mismatches] == [("behavior", "prompt template (answers)")]
    assert res.base.templates == {"answers": ["qa-v1"], "evidence.requests": ["race-v1"]}
    assert [r.family for r in res.metrics if r.definition_differs] == ["behavior"]


def test_generations_store_their_template_outside_the_cache_key(tmp_path):
    model = create_model(ModelConfig(spec="mock/reasoner", name="mock-a", options={"accuracy": 0.7}))
    item = Item(id="q1", input="What is 1 + 1?", target=2, answer_type="number")
    planned = planned_request(model, "ds", item, "original", 0, [{"role": "user", "content": item.input}], 3,
                              "qa-v1", {})
    # the key of this request before templates were stored: old runs resolve to the same completions
    assert planned.key == "fef989b0f3e7b9a275033145de5e89047308183b91007fde2341ec0a12224f4a"
    store = Store(tmp_path)
    asyncio.run(generate_pending(model, [planned], store))
    (request,) = store.conn.execute("SELECT request FROM generations WHERE key=?", (planned.key,)).fetchone()
    assert json.loads(request)["template"] == "qa-v1"
    store.close()


def test_imported_outputs_record_their_format_as_template(tmp_path):
    store = Store(tmp_path)
    run_id = store.start_run(kind="score", config={}, seed=0)
    store.import_completions(run_id, str(tmp_path / "out.jsonl"), [(1, "m", "ds", "i0", "original", 0,
                                                                    Completion(text="4"), None)],
                             template="imported:jsonl")
    (request,) = store.conn.execute("SELECT request FROM generations").fetchone()
    assert json.loads(request) == {"line": 1, "source": str(tmp_path / "out.jsonl"), "template": "imported:jsonl"}
    store.close()


def test_the_command_line_asks_the_registry_which_families_score_answers(tmp_path):
    """attack scores no answers: the registry says so; without it, a family of no own prompt is assumed to."""
    def run(name, template, seed):
        return make_run(tmp_path / name, {("behavior", "CQ", "m"): shares(CQ_BASE),
                                          ("attack", "token.success", "m"): shares(CQ_NEW)},
                        config={"families": {"behavior": BEHAVIOR, "attack": {}}}, outputs=ANSWERS,
                        template=template, seed=seed)

    base, new = run("b", "qa-v1", 0), run("n", "qa-v2", 1)
    assert [m.family for m in compare_runs(base, new).mismatches] == ["attack", "behavior"]
    out = CliRunner().invoke(app, ["compare", str(base), str(new), "--format", "json"])
    assert out.exit_code == 2
    assert [m["family"] for m in json.loads(out.stdout)["mismatches"]] == ["behavior"]


@pytest.mark.slow
def test_real_mock_runs_with_another_prompt_template_block_the_gate(tmp_path, monkeypatch):
    """Two runs of the mock reasoner, the second with the answers' template version raised: exit 2, then 0."""
    from rich.console import Console

    import reasonscope.pipeline.runner as runner_module
    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan
    from reasonscope.prompts import TEMPLATE_VERSION

    def run(name):
        plan = parse_plan({"experiment": {"name": name, "seed": 1, "output_dir": str(tmp_path)},
                           "models": [{"spec": "mock/reasoner", "name": "mock", "options": {"accuracy": 0.8}}],
                           "datasets": [{"name": "synthetic", "format": "synthetic", "size": 10, "seed": 0}],
                           "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                                     "similarity": {"method": "embedding"}}}})
        Runner(plan, console=Console(quiet=True)).run()
        return tmp_path / name

    base = run("base")
    monkeypatch.setattr(runner_module, "TEMPLATE_VERSION", "qa-test-v2")
    new = run("new")
    res = compare_runs(base, new)
    assert res.base.templates == {"answers": [TEMPLATE_VERSION]} and res.new.templates == {"answers": ["qa-test-v2"]}
    assert [m.message.split(":")[0] for m in res.mismatches] == [
        f"prompt template {TEMPLATE_VERSION} -> qa-test-v2 (behavior, answers)"]
    assert res.exit_code == 2
    assert compare_runs(base, new, allow_mismatch=True).exit_code == 0  # the mock answers alike under both


def test_a_use_with_generations_on_one_side_only_is_noted(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): shares(CQ_BASE)}, outputs=ANSWERS, template="qa-v1")
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): shares(CQ_BASE)}, seed=1)
    res = compare_runs(base, new)
    assert res.mismatches == [] and res.exit_code == 0
    assert res.not_checked == ["prompt template not checked (behavior, answers): NEW: no generation of this use"]
