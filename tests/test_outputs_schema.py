"""Typed outputs: the committed JSON Schemas are current, and real run outputs validate against them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.output_files import SCHEMA_VERSION, json_schemas, output_file, output_models, schema_text
from reasonscope.registry import all_families

BUILT_IN = [f for f in all_families() if f.name in ("behavior", "evidence", "information", "attributes", "attack")]
OUTPUT_MODELS = output_models(BUILT_IN)  # the committed schemas describe the built-in five
OUTPUT_FILES = {name: output_file(name) for name in OUTPUT_MODELS}
Summary = OUTPUT_MODELS["summary"]
REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "docs" / "schemas"


def validators() -> dict[str, jsonschema.protocols.Validator]:
    out = {}
    for name in OUTPUT_MODELS:
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        out[name] = cls(schema)
    return out


def records(run_dir: Path) -> dict[str, list[dict]]:
    """Every output file of ``run_dir`` that has a schema: name -> its records (one for summary.json)."""
    out = {}
    for name, file in OUTPUT_FILES.items():
        path = run_dir / file
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            out[name] = [json.loads(text)] if name == "summary" else [json.loads(x) for x in text.splitlines()]
    return out


def assert_valid(run_dir: Path) -> dict[str, list[dict]]:
    found = records(run_dir)
    checks = validators()
    for name, rows in found.items():
        for i, row in enumerate(rows):
            errors = sorted(checks[name].iter_errors(row), key=lambda e: list(e.path))
            assert not errors, f"{run_dir.name}/{OUTPUT_FILES[name]} record {i}: " + "; ".join(
                f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5])
            OUTPUT_MODELS[name].model_validate(row)
    return found


def run_example(tmp_path, monkeypatch, plan: str) -> Path:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["run", f"examples/{plan}"], catch_exceptions=False)
    assert res.exit_code == 0, res.output[-3000:]
    (summary,) = [p for p in tmp_path.rglob("summary.json")]
    return summary.parent


def test_committed_schemas_are_the_generated_ones():
    generated = json_schemas(BUILT_IN)
    committed = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    committed -= {"compare"}  # not a run's file: `reasonscope compare --format json`, checked in test_compare_cli.py
    assert committed == set(OUTPUT_MODELS), "run `reasonscope output-schema docs/schemas` and commit the files"
    for name, schema in generated.items():
        text = (SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8")
        assert text == schema_text(schema), f"docs/schemas/{name}.schema.json is stale: run `reasonscope output-schema docs/schemas`"
        assert schema["version"] == SCHEMA_VERSION and SCHEMA_VERSION in schema["$id"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", SCHEMA_VERSION)


def test_schema_command_prints_and_writes(tmp_path):
    res = CliRunner().invoke(app, ["output-schema", "--name", "samples"])
    assert res.exit_code == 0 and json.loads(res.output) == json_schemas(BUILT_IN)["samples"]
    res = CliRunner().invoke(app, ["output-schema", str(tmp_path)])
    assert res.exit_code == 0 and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{n}.schema.json" for n in OUTPUT_MODELS)
    res = CliRunner().invoke(app, ["output-schema", "--name", "nope"])
    assert res.exit_code != 0 and "unknown schema 'nope'" in res.output


def test_mock_run_outputs_validate_and_rows_carry_the_cache_key(tmp_path, monkeypatch):
    run_dir = run_example(tmp_path, monkeypatch, "mock.yaml")
    found = assert_valid(run_dir)
    summary = found["summary"][0]
    assert summary["schema_version"] == SCHEMA_VERSION
    rows = found["samples"]
    # examples/mock.yaml: 2 models x 5 items x 3 types x (1 + 3 paraphrases) variants... as counted by the run
    assert len(rows) == summary["generations"]["total"] == 180
    keys = [r["key"] for r in rows]
    assert all(isinstance(k, str) and re.fullmatch(r"[0-9a-f]{64}", k) for k in keys)
    assert len(set(keys)) == len(rows)  # one request per (model, item, variant, sample)
    from reasonscope.storage.store import Store

    store = Store.open_existing(run_dir)
    try:
        stored = {row["key"] for row in store.run_generations(summary["run"]["run_id"])}
    finally:
        store.close()
    assert set(keys) == stored


def test_evidence_and_attributes_outputs_validate(tmp_path, monkeypatch):
    run_dir = run_example(tmp_path / "e", monkeypatch, "evidence_pairs.yaml")
    found = assert_valid(run_dir)
    assert len(found["evidence_instances"]) == 6 and found["summary"][0]["evidence"]
    run_dir = run_example(tmp_path / "a", monkeypatch, "attributes.yaml")
    found = assert_valid(run_dir)
    assert len(found["attributes_judgements"]) == 2 * 30  # two judges x 30 chains
    assert found["summary"][0]["attributes"]["scores"]


def test_schemas_reject_what_a_run_never_writes():
    row = {"model": "m", "dataset": "d", "item_id": "i", "variant": "original", "sample": 0, "input": "q",
           "original_input": "q", "answer_type": "text", "prediction": "p", "source": "generated"}
    checks = validators()
    assert [e.message for e in checks["samples"].iter_errors(row)] == ["'key' is a required property"]
    assert not list(checks["samples"].iter_errors({**row, "key": None}))
    assert "Additional properties are not allowed ('extra' was unexpected)" in [
        e.message for e in checks["samples"].iter_errors({**row, "key": None, "extra": 1})]
    summary = {"run": {"run_id": "r", "kind": "run", "status": "finished"}, "config": {},
               "generations": {"total": 1, "missing": 0, "failed": 0, "imported": 0}}
    assert not list(checks["summary"].iter_errors(summary))
    bad = {**summary, "behavior": {"metrics": {"m": {"CQ": {"value": "high"}}}}}
    worst = jsonschema.exceptions.best_match(checks["summary"].iter_errors(bad))
    assert list(worst.absolute_path) == ["behavior", "metrics", "m", "CQ", "value"] and "'high'" in worst.message
    with pytest.raises(ValueError, match="generations"):
        Summary.model_validate({k: v for k, v in summary.items() if k != "generations"})


@pytest.mark.slow
def test_attack_and_information_outputs_validate(tmp_path, tiny_causal_lm, tiny_seq2seq):
    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan

    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "input": "Ana has 3 apples and gets 5 more . How many apples ?",
                                "target": 8, "answer_type": "number"}) + "\n")
    plan = parse_plan({
        "experiment": {"name": "atk", "output_dir": str(tmp_path), "seed": 2},
        "models": [{"spec": f"hf/{tiny_causal_lm}", "name": "tiny"}],
        "datasets": [{"name": "qs", "format": "jsonl", "path": str(data)}],
        "families": {"attack": {"steps": 1, "candidates": 2, "min_similarity": None, "cot_tokens": 8,
                                "methods": ["random"], "judge": {"spec": "mock/judge", "options": {"ok_rate": 1}}}},
        "stats": {"n_resamples": 200}})
    found = assert_valid(Runner(plan, show_progress=False).run().run_dir)
    assert found["summary"][0]["attack"]["models"]["tiny"]["items"] == 1
    plan = parse_plan({
        "experiment": {"name": "info", "output_dir": str(tmp_path), "seed": 0},
        "families": {"information": {
            "train": {"name": "tr", "format": "synthetic", "size": 3, "seed": 1},
            "test": {"name": "te", "format": "synthetic", "size": 1, "seed": 2},
            "methods": ["rev", "larev"], "evaluator": str(tiny_seq2seq), "epochs": 1, "lr": 1e-3}}})
    found = assert_valid(Runner(plan, show_progress=False).run().run_dir)
    assert set(found["summary"][0]["information"]["absolute"]) == {"rev", "larev"}


def test_summary_model_is_assembled_from_the_families_given():
    """A family's field in summary.json is its report's summary type; the core names no family."""
    from reasonscope.report.view import FamilyReport

    class Toy:
        name = "toy"
        metrics = ()
        report = FamilyReport("toy", title="Toy")

    model = output_models([Toy()])
    assert list(model) == ["summary", "samples"]  # the generic report part declares no JSONL file
    fields = model["summary"].model_fields
    assert list(fields)[-2:] == ["toy", "left_out"] and "behavior" not in fields
    core = {"run": {"run_id": "r", "kind": "run", "status": "finished"}, "config": {},
            "generations": {"total": 0, "missing": 0, "failed": 0, "imported": 0}}
    assert model["summary"].model_validate({**core, "toy": {"x": 1}}).toy == {"x": 1}
    with pytest.raises(ValueError, match="behavior\n  Extra inputs are not permitted"):
        model["summary"].model_validate({**core, "behavior": {}})  # closed: a family not given is an unknown key


def test_old_names_of_the_output_models_still_work_with_a_warning():
    import reasonscope.output_files as outputs

    with pytest.warns(DeprecationWarning, match="moved to reasonscope.attack.summary_model.AttackItem"):
        assert outputs.AttackItem.__name__ == "AttackItem"
    with pytest.warns(DeprecationWarning, match="use summary_model"):
        assert set(outputs.Summary.model_fields) == set(Summary.model_fields)


def test_outputs_module_imports_nothing_of_reasonscope():
    """The output models sit at the ground floor: any layer (report, command line, a family) may import them."""
    import ast

    import reasonscope.output_files as outputs

    tree = ast.parse(Path(outputs.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    relative = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level > 0]
    assert relative == [] and imported == {"__future__", "collections", "importlib", "json", "pathlib", "typing",
                                           "warnings", "pydantic"}
