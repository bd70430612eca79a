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


def test_other_processes_cpu_from_proc_stat(load_benchmark, tmp_path, monkeypatch):
    dr = load_benchmark("demo_runtimes")
    monkeypatch.setattr(dr.os, "sysconf", lambda name: 100)  # clock ticks per second
    # user nice system idle iowait irq softirq steal: busy = all but idle and iowait
    stat = "cpu  1000 50 300 9000 400 20 30 100 0 0\ncpu0 500 25 150 4500 200 10 15 50 0 0\n"
    assert dr.busy_cpu_seconds(stat) == 15.0  # (1000 + 50 + 300 + 20 + 30 + 100) / 100
    assert dr.other_cpu(15.0, 40.0, 21.25) == 3.8  # 25 busy seconds, 21.25 of them the command's
    assert dr.other_cpu(None, 40.0, 1.0) is None
    assert dr.fmt_other(None) == "-" and dr.fmt_other(3.75) == "3.8"
    with pytest.raises(SystemExit, match=r"-c raise SystemExit\(3\) exited 3; see .*log.txt"):
        dr.timed(["python", "-X", "utf8", "-c", "raise SystemExit(3)"], tmp_path / "log.txt")


def test_race_former_runtime_against_now(load_benchmark, tmp_path, capsys):
    """race_runtimes.py --former: the medians of each version, their ratio, and the first runs pair by pair."""
    rr = load_benchmark("race_runtimes")
    msg = [{"role": "user", "content": "q"}]
    for name, texts in (("old", ["a", "b"]), ("new", ["a", "c"])):
        (tmp_path / name / "llm").mkdir(parents=True)
        _store(tmp_path / name / "llm" / "store.sqlite", [
            ({"messages": msg, "temperature": 0.7, "seed": 1, "sample": i, "runtime": "llama-cpp"}, t)
            for i, t in enumerate(texts)])
    runs = [{"position": p, "runtime": rt, "wall": w, "phases": {"generation": g}, "projected": pr,
             "folder": str(tmp_path / ("old" if rt == "former" else "new"))}
            for p, rt, w, g, pr in ((1, "former", 30.0, 24.0, 4.0), (2, "llama-cpp", 32.0, 25.0, 4.5),
                                    (3, "llama-cpp", 28.0, 23.0, 4.1), (4, "former", 31.0, 25.0, 4.2))]
    first = [{"item_id": "p1", "predicted": "entailment", "rationale": "r"},
             {"item_id": "p2", "predicted": "neutral", "rationale": "s"}]
    second = [{"item_id": "p1", "predicted": "entailment", "rationale": "r"},
              {"item_id": "p2", "predicted": "contradiction", "rationale": None}]
    rr.former(runs, {1: first, 2: second, 3: second, 4: first})
    assert capsys.readouterr().out.splitlines() == [
        "median wall: former 30.5 s, now 30.0 s, former / now = 1.017 (generation phase 24.5 s and 24.0 s, 1.021); "
        "1,000 pairs projected: former 4.10 min, now 4.30 min",
        "first former run vs first run now: same label 1/2, same rationale 1/2; same generated text: greedy 0/0, "
        "sampled 1/2"]


def test_run_order_puts_the_former_copy_first_for_c_only(load_benchmark, tmp_path, monkeypatch):
    """demo_runtimes.run_order: C is llama.cpp with the former copy first on PYTHONPATH; the path is restored."""
    dr = load_benchmark("demo_runtimes")
    with pytest.raises(SystemExit, match="--order C needs --former"):
        dr.run_order(tmp_path, "BC", None, lambda folder: ["demo"], "demo")
    seen = []
    monkeypatch.setenv("PYTHONPATH", "/site")
    monkeypatch.setattr(dr, "run_series", lambda out, letter, args_of, run_name, **extra: seen.append(
        (letter, dr.os.environ.get("PYTHONPATH"), extra)))
    dr.run_order(tmp_path, "CBA", tmp_path / "old", lambda folder: ["demo"], "demo", pairs=3)
    assert seen == [("B", f"{tmp_path / 'old'}{dr.os.pathsep}/site", {"pairs": 3, "version": "former"}),
                    ("B", "/site", {"pairs": 3, "version": "now"}), ("A", "/site", {"pairs": 3, "version": "now"})]
    assert dr.os.environ["PYTHONPATH"] == "/site"


def test_demo_former_against_now(load_benchmark, tmp_path, capsys):
    """demo_runtimes.py --former: median wall and phases of each version, generations and summary values equal."""
    dr = load_benchmark("demo_runtimes")
    msg = [{"role": "user", "content": "q"}]
    for name, texts, val in (("old", ["a", "b"], 0.5), ("new", ["a", "c"], 0.25)):
        (tmp_path / name / "demo").mkdir(parents=True)
        _store(tmp_path / name / "demo" / "store.sqlite", [
            ({"messages": msg, "temperature": 0.0, "seed": 1, "sample": i}, t) for i, t in enumerate(texts)])
        (tmp_path / name / "demo" / "summary.json").write_text(json.dumps(
            {"information": {"rev": val, "n": 60}, "attack": {"rate": 0.2}}))
    runs = [{"position": p, "runtime": "llama-cpp", "version": v, "wall": w, "phases": {"information": i},
             "folder": str(tmp_path / ("old" if v == "former" else "new"))}
            for p, v, w, i in ((1, "former", 180.0, 60.0), (2, "now", 170.0, 52.0), (3, "now", 172.0, 54.0),
                               (4, "former", 178.0, 58.0))]
    dr.former_report(runs)
    assert capsys.readouterr().out.splitlines() == [
        "median wall: former 179.0 s, now 171.0 s, former / now = 1.047",
        "  information  former    59.0 s  now    53.0 s  ratio 1.113",
        "same text, first former run vs first run now: greedy 1/2, sampled 0/0 (requests in one store only: 0)",
        "former vs now, behavior: 0/0 numeric values of summary.json equal",
        "former vs now, evidence: 0/0 numeric values of summary.json equal",
        "former vs now, attributes: 0/0 numeric values of summary.json equal",
        "former vs now, attack: 1/1 numeric values of summary.json equal",
        "former vs now, information: 1/2 numeric values of summary.json equal"]


def test_expected_scores_benchmark_reads_the_runs_first_rationales(load_benchmark, tmp_path):
    """expected_scores_llama.rationales: original variant, sample 0, no error, in file order; none is an error."""
    es = load_benchmark("expected_scores_llama")
    rows = [{"variant": "original", "sample": 0, "input": "q1", "prediction": "r1", "error": None},
            {"variant": "paraphrase-1", "sample": 0, "input": "q1p", "prediction": "x", "error": None},
            {"variant": "original", "sample": 1, "input": "q1", "prediction": "y", "error": None},
            {"variant": "original", "sample": 0, "input": "q2", "prediction": None, "error": "timeout"},
            {"variant": "original", "sample": 0, "input": "q3", "prediction": None, "error": None},
            {"variant": "original", "sample": 0, "input": "q4", "prediction": "r4", "error": None}]
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert es.rationales(tmp_path, 2) == [("q1", "r1"), ("q3", "")]
    assert es.rationales(tmp_path, 10) == [("q1", "r1"), ("q3", ""), ("q4", "r4")]
    (tmp_path / "samples.jsonl").write_text(json.dumps(rows[1]) + "\n")
    with pytest.raises(SystemExit, match="no original, first-sample row without an error"):
        es.rationales(tmp_path, 2)
