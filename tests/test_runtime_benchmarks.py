"""benchmarks/demo_runtimes.py and race_runtimes.py: request matching across runtimes, headline values, orders."""

from __future__ import annotations

import json
import sqlite3

import pytest


def _store(path, rows):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE generations(key TEXT PRIMARY KEY, request TEXT, text TEXT)")
    conn.executemany("INSERT INTO generations VALUES (?, ?, ?)",
                     [(str(i), json.dumps(req), text) for i, (req, text) in enumerate(rows)])
    conn.commit()
    conn.close()
    return path


def test_agreement_matches_requests_without_the_runtime_key(load_benchmark, tmp_path):
    dr = load_benchmark("demo_runtimes")
    msg = [{"role": "user", "content": "q"}]
    torch = _store(tmp_path / "a.sqlite", [
        ({"messages": msg, "temperature": 0.0, "seed": 1}, "same"),
        ({"messages": msg, "temperature": 0.7, "seed": 1, "sample": 0}, "x"),
        ({"messages": msg, "temperature": 0.7, "seed": 1, "sample": 1}, "y"),
        ({"item": "wp-0", "record": 2}, "an attack record, not a completion"),
    ])
    llama = _store(tmp_path / "b.sqlite", [
        ({"messages": msg, "temperature": 0.0, "seed": 1, "runtime": "llama-cpp"}, "same"),
        ({"messages": msg, "temperature": 0.7, "seed": 1, "sample": 0, "runtime": "llama-cpp"}, "x"),
        ({"messages": msg, "temperature": 0.7, "seed": 1, "sample": 1, "runtime": "llama-cpp"}, "z"),
        ({"messages": msg, "temperature": 0.7, "seed": 1, "sample": 2, "runtime": "llama-cpp"}, "w"),
    ])
    assert dr.agreement(torch, llama) == {"greedy": (1, 1), "sampled": (1, 2), "unmatched": (1, 4)}
    assert dr.runtimes_used(torch) == ["torch"]
    assert dr.runtimes_used(llama) == ["llama-cpp"]


def test_headline_reads_point_estimates(load_benchmark):
    dr = load_benchmark("demo_runtimes")
    summary = {"behavior": {"metrics": {"m": {"CQ": {"value": 0.25, "low": 0.1}, "LS": {"value": None}}}},
               "evidence": {"m": {"llm": {"accuracy": 0.5}, "coverage": {"token": {
                   "all": {"support": {"value": 0.4}}, "asymmetry_difference": {"value": -0.1}}}}}}
    got = dr.headline(summary)
    assert got["behavior CQ (m)"] == 0.25
    assert got["behavior LS (m)"] is None
    assert got["evidence LLM accuracy (m)"] == 0.5
    assert got["evidence support coverage, token (m)"] == 0.4
    assert got["evidence contradict coverage, token (m)"] is None
    assert got["evidence A(correct) - A(incorrect), token (m)"] == -0.1
    assert dr.flat_numbers({"a": [1, {"b": 2.5, "c": "x", "d": True}]}) == {"a[0]": 1.0, "a[1].b": 2.5}


def test_a_bad_order_is_refused_before_anything_runs(load_benchmark, tmp_path):
    dr = load_benchmark("demo_runtimes")
    with pytest.raises(SystemExit, match=r"letters A \(torch\) and B \(llama.cpp\) only, got 'ABC'"):
        dr.run_series(tmp_path, "ABC", lambda folder: ["demo"], "demo")
    assert list(tmp_path.iterdir()) == []
    assert dr.command("torch", ["demo"])[3:] == ["torch", "demo"]
    assert dr.command("llama-cpp", ["demo"])[3:] == ["llama-cpp,torch", "demo"]
