"""``reasonscope view``: run discovery and path safety, read-only store access, the pages and API handlers
(Starlette's TestClient, no browser), item paging and filters, the static export and the command line.
The browser tests are in tests/test_view_browser.py."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from reasonscope.cli import app as cli_app  # noqa: E402
from reasonscope.store import Store  # noqa: E402
from reasonscope.view import ItemQuery, RunNotFound, Viewer, discover_runs  # noqa: E402
from reasonscope.view.app import filter_rows, make_app  # noqa: E402
from reasonscope.view.export import export_site, slugs  # noqa: E402
from reasonscope.view.mock_runs import write_mock_run  # noqa: E402
from reasonscope.view.paths import resolve_run  # noqa: E402
from reasonscope.view.readonly import StoreUnreadable, open_read_only  # noqa: E402
from reasonscope.view.serve import host_warning  # noqa: E402

EVIL = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">\nAnswer: 1"
DAY = 86400.0
T0 = 1_790_000_000.0  # 2026-09-21 UTC


@pytest.fixture
def runs(tmp_path):
    """Three runs: a (30 items, models m1 and m2, item 0's output holds a script), nested/b (10 items,
    mock-a, a day later) and broken (not a SQLite file)."""
    root = tmp_path / "runs"
    write_mock_run(root / "a", items=30, models=("m1", "m2"), created=T0, outputs={0: EVIL})
    write_mock_run(root / "nested" / "b", items=10, created=T0 + DAY, exit_code=3)
    (root / "broken").mkdir()
    (root / "broken" / "store.sqlite").write_bytes(b"this is not a database" * 100)
    return root


def client(root: Path) -> TestClient:
    return TestClient(make_app(Viewer(root)), base_url="http://127.0.0.1")


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# ------------------------------------------------------------------------------------------ paths


def test_discovery_finds_nested_runs_and_refuses_ways_out(tmp_path, runs):
    outside = tmp_path / "outside"
    write_mock_run(outside / "secret", items=2)
    (runs / "linked-dir").symlink_to(outside / "secret", target_is_directory=True)  # a folder leading out
    (runs / "linked-store").mkdir()
    (runs / "linked-store" / "store.sqlite").symlink_to(outside / "secret" / "store.sqlite")  # a store leading out
    found = discover_runs(runs)
    assert list(found) == ["a", "broken", "nested/b"]
    root = runs.resolve()
    assert resolve_run(root, found, "nested/b") == root / "nested" / "b"
    for key, why in (("../outside/secret", "'..' is refused"), ("/etc", "absolute paths are refused"),
                     ("a\\..\\..", "not a run key"), ("linked-dir", "no such run"), ("linked-store", "no such run"),
                     ("nested", "no such run"), ("", "not a run key")):
        with pytest.raises(RunNotFound, match=why.replace("(", r"\(")):
            resolve_run(root, found, key)
    c = client(runs)
    for key in ("../outside/secret", "linked-dir", "%2e%2e/outside/secret"):
        r = c.get("/items", params={"run": key})
        assert r.status_code == 404 and "secret" not in r.text.replace(key, "")
    assert c.get("/api/items", params={"run": "/etc/passwd"}).json() == {
        "error": "run '/etc/passwd': absolute paths are refused; name a run relative to the viewed folder"}


# ------------------------------------------------------------------------------------------ read-only


def test_viewing_writes_nothing_into_the_run_folders(runs):
    before = listing(runs)
    c = client(runs)
    for url in ("/", "/run?run=a", "/report?run=a", "/items?run=a", "/items?run=a&metric=behavior.CQ&outcome=answered",
                "/compare?run=a&run=nested/b", "/api/runs", "/run?run=broken"):
        assert c.get(url).status_code == 200, url
    assert listing(runs) == before  # no -wal, -shm, journal, lock or report file


def test_a_run_being_written_is_read_without_blocking_its_writer(runs):
    from reasonscope.rundir import RunDirLock

    lock = RunDirLock(runs / "a").acquire()  # a writer holds the run folder's lock, as `reasonscope run` does
    writer = Store(runs / "a")  # WAL mode: -wal and -shm now exist, the viewer reads through them
    run_id = writer.run()["run_id"]
    writer.conn.execute("BEGIN IMMEDIATE")  # the writer holds the write lock, a transaction open
    writer.conn.execute("INSERT INTO scores(run_id, family, metric, model, item_id, value, reason, details) "
                        "VALUES (?, 'behavior', 'CQ', 'm3', 'arith/q000001', 1, NULL, '{}')", (run_id,))
    c = client(runs)
    started = time.monotonic()
    page = c.get("/api/items", params={"run": "a", "metric": "behavior.CQ"}).json()
    assert page["total"] == 60 and time.monotonic() - started < 5  # the uncommitted row is not seen
    done = threading.Event()

    def commit():
        writer.conn.execute("COMMIT")
        done.set()

    t = threading.Thread(target=commit)
    t.start()
    t.join(5)
    assert done.is_set()  # the reader never blocked the writer
    page = c.get("/api/items", params={"run": "a", "metric": "behavior.CQ", "model": "m3"}).json()
    assert page["total"] == 1 and page["rows"][0]["key"] == "arith/q000001"  # committed: seen at once
    writer.close()
    lock.release()


def test_damaged_newer_and_older_stores_are_an_error_on_their_row(runs, tmp_path):
    newer = runs / "newer"
    write_mock_run(newer, items=2)
    conn = sqlite3.connect(newer / "store.sqlite")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    c = client(runs)
    rows = {r["key"]: r for r in c.get("/api/runs").json()}
    assert "not a readable store" in rows["broken"]["error"]
    assert "written by a newer reasonscope (store schema 99" in rows["newer"]["error"]
    assert rows["a"]["error"] is None
    page = c.get("/")
    assert page.status_code == 200 and page.text.count("cannot read this run") == 2
    assert "cannot read this run" in c.get("/run?run=broken").text
    assert c.get("/items?run=broken").status_code == 500
    with pytest.raises(StoreUnreadable, match="not a readable store"), open_read_only(runs / "broken"):
        pass


# ------------------------------------------------------------------------------------------ Runs page


def test_runs_rows_name_models_datasets_outcome_and_headline(runs):
    rows = {r["key"]: r for r in client(runs).get("/api/runs").json()}
    b = rows["nested/b"]
    assert (b["models"], b["datasets"], b["families"], b["date"]) == (["mock-a"], {"arith": 10}, ["behavior"],
                                                                       "2026-09-22 14:13 UTC")
    assert (b["exit_code"], b["outcome"], b["failed"], b["pending"]) == (3, "requests pending: mock outcome", 0, 0)
    # CQ: items 2, 5, 8 wrong of 10 -> 0.7; the mock's interval 0.7 -+ 1.96 sqrt(0.21 / 10) = [0.416, 0.984]
    card = b["cards"][0]
    assert (card["title"], card["headline"]) == ("Behaviour", "Correctness (CQ)")
    assert card["lines"] == [{"name": "mock-a", "value": "0.7 [0.4, 1.0]", "n": "n=10"}]
    assert rows["a"]["datasets"] == {"arith": 30} and rows["a"]["models"] == ["m1", "m2"]


def test_runs_summary_of_another_run_is_not_shown_as_this_runs(runs):
    summary = json.loads((runs / "a" / "summary.json").read_text())
    summary["run"]["run_id"] = "older-run"
    (runs / "a" / "summary.json").write_text(json.dumps(summary))
    row = next(r for r in client(runs).get("/api/runs").json() if r["key"] == "a")
    assert row["cards"] == [] and "summary.json is of run older-run" in row["cards_note"]


def test_runs_filters(runs):
    rows = Viewer(runs).rows()
    keys = lambda rs: sorted(r.key for r in rs)  # noqa: E731
    assert keys(filter_rows(rows, model="M2")) == ["a"]
    assert keys(filter_rows(rows, dataset="arith")) == ["a", "nested/b"]
    assert keys(filter_rows(rows, family="behav", since="2026-09-22")) == ["nested/b"]
    assert keys(filter_rows(rows, until="2026-09-21")) == ["a"]
    c = client(runs)
    assert [r["key"] for r in c.get("/api/runs", params={"model": "mock-a"}).json()] == ["nested/b"]
    page = c.get("/").text
    assert page.index('data-key="nested/b"') < page.index('data-key="a"')  # newest first


# ------------------------------------------------------------------------------------------ Items


def test_items_paging_is_ordered_and_complete(runs):
    c = client(runs)
    seen = []
    for page in (1, 2, 3):
        p = c.get("/api/items", params={"run": "a", "per_page": 25, "page": page}).json()
        assert (p["total"], p["pages"]) == (60, 3)
        seen += [(r["key"], r["model"]) for r in p["rows"]]
    assert len(seen) == 60 and len(set(seen)) == 60
    assert seen[:2] == [("arith/q000000", "m1"), ("arith/q000001", "m1")]  # model, then item
    assert seen[29:31] == [("arith/q000029", "m1"), ("arith/q000000", "m2")]
    first = c.get("/api/items", params={"run": "a", "per_page": 1}).json()["rows"][0]
    assert (first["input"], first["target"]) == ("What is 0 + 1?", "1")
    assert first["generations"][0]["raw_text"] == EVIL and first["generations"][0]["answer"] == "1.0"
    assert [(s["metric"], s["value"], s["reason"]) for s in first["scores"]] == [
        ("behavior.CQ", 0.0, None), ("behavior.LS", None, "not computed: no NLI backend"), ("behavior.SS", 0.0, None)]
    assert json.loads(first["scores"][0]["details"]) == {"answer": "1"}


def test_items_filters_by_model_metric_value_and_outcome(runs):
    conn = sqlite3.connect(runs / "a" / "store.sqlite")
    conn.execute("UPDATE generations SET error='refused' WHERE key='mock-m1-q000004'")  # a failed generation
    conn.execute("DELETE FROM generations WHERE key='mock-m2-q000007'")  # a pending request
    conn.commit()
    conn.close()
    c = client(runs)

    def keys(**params):
        p = c.get("/api/items", params={"run": "a", "per_page": 500, **params}).json()
        assert p["total"] == len(p["rows"])
        return [(r["key"].split("/")[1], r["model"]) for r in p["rows"]]

    assert len(keys(model="m2")) == 30
    # CQ 0: items 2, 5, ..., 29 (every third is wrong) and item 0 (its output holds the script): 11 per model
    wrong = keys(metric="behavior.CQ", value="0", model="m1")
    assert [k for k, _ in wrong] == ["q000000", *(f"q{i:06d}" for i in range(2, 30, 3))]
    assert len(keys(metric="behavior.CQ", value="1")) == 2 * 19
    assert len(keys(metric="behavior.LS", value="na")) == 60
    assert len(keys(metric="behavior.SS", value="other")) == 2 * 27  # (i % 10) / 10 is 0 for i = 0, 10, 20 only
    assert keys(outcome="failed") == [("q000004", "m1")]
    assert keys(outcome="pending") == [("q000007", "m2")]
    assert keys(outcome="pending", metric="behavior.CQ") == [("q000007", "m2")]
    assert keys(outcome="failed", metric="behavior.CQ", value="0") == []  # item 4 scored 1
    assert len(keys(outcome="answered")) == 58
    pending = c.get("/api/items", params={"run": "a", "outcome": "pending"}).json()["rows"][0]
    assert pending["generations"][0]["done"] is False


@pytest.mark.parametrize(("params", "message"), [
    ({"value": "1"}, "value filter needs a metric"),
    ({"metric": "CQ"}, "must be written family.metric"),
    ({"page": "0"}, "page: Input should be greater than or equal to 1"),
    ({"per_page": "501"}, "per_page: Input should be less than or equal to 500"),
    ({"outcome": "won"}, "outcome: Input should be 'answered', 'failed' or 'pending'"),
])
def test_bad_item_queries_are_400_naming_the_field(runs, params, message):
    r = client(runs).get("/api/items", params={"run": "a", **params})
    assert r.status_code == 400 and message in r.json()["error"]


def test_model_output_and_secrets_are_shown_as_inert_text(runs, monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    conn = sqlite3.connect(runs / "a" / "store.sqlite")
    conn.execute("UPDATE generations SET text = text || ' leaked ' || ? WHERE key='mock-m1-q000001'", (secret,))
    conn.execute("UPDATE runs SET config = json_set(config, '$.models[0].api_key', ?)", (secret,))
    conn.commit()
    conn.close()
    c = client(runs)
    items = c.get("/items", params={"run": "a", "per_page": 4}).text
    assert "<script>window.__pwned" not in items and "<img src=x" not in items
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;img src=x onerror=" in items
    assert secret not in items and "leaked [masked:OPENAI_API_KEY]" in items
    run = c.get("/run", params={"run": "a"})
    assert secret not in run.text and '&#34;api_key&#34;: &#34;***&#34;' in run.text
    assert secret not in c.get("/api/items", params={"run": "a"}).text.replace("[masked", "")
    assert "script-src 'self'" in run.headers["content-security-policy"]
    assert run.headers["x-content-type-options"] == "nosniff"


# ------------------------------------------------------------------------------------------ Run, Compare


def test_run_page_links_each_number_to_its_items_and_embeds_the_report(runs):
    c = client(runs)
    page = c.get("/run", params={"run": "a"}).text
    assert '<a href="/items?run=a&amp;metric=behavior.CQ&amp;model=m1">0.633</a>' in page  # 19 of 30 right
    assert 'sandbox="allow-scripts" src="/report?run=a"' in page
    report = c.get("/report", params={"run": "a"})
    assert report.status_code == 200 and "<title>reasonscope report" in report.text
    assert "Behaviour metrics per model" in report.text  # the report's own table, by the report's code
    assert c.get("/api/index", params={"run": "a"}).json()[0] == {
        "metric": "behavior.CQ", "model": "m1", "n": 30, "valued": 30, "mean": pytest.approx(19 / 30)}


def test_compare_page(runs):
    c = client(runs)
    page = c.get("/compare", params=[("run", "a"), ("run", "nested/b")])
    assert page.status_code == 200 and 'id="side-by-side"' in page.text
    assert "0.7 [0.4, 1.0] n=10" in page.text
    assert 'id="paired-table"' in page.text or 'id="paired-missing"' in page.text
    assert c.get("/compare", params={"run": "a"}).status_code == 400
    swapped = c.get("/compare", params=[("run", "nested/b"), ("run", "a")]).text  # oldest first: a is BASE
    assert swapped.index('href="/run?run=a"') < swapped.index('href="/run?run=nested%2Fb"')


def test_compare_two_runs_shows_reasonscope_compare_numbers(tmp_path):
    pytest.importorskip("reasonscope.compare")
    from reasonscope.compare import compare_runs

    root = tmp_path / "runs"
    write_mock_run(root / "base", items=40, created=T0)
    write_mock_run(root / "new", items=40, created=T0 + DAY, outputs={i: "Answer: -1" for i in range(0, 40, 4)})
    result = compare_runs(root / "base", root / "new")
    page = client(root).get("/compare", params=[("run", "base"), ("run", "new")]).text
    cq = next(m for m in result.metrics if m.metric == "CQ")
    assert f"<td>behavior.CQ</td><td>{cq.label}</td>" in page.replace("&#39;", "'")
    assert f"exit code {result.exit_code}:" in page
    assert f"<td>{cq.verdict.value if hasattr(cq.verdict, 'value') else cq.verdict}</td>" in page


# ------------------------------------------------------------------------------------------ export, CLI, serving


def test_export_writes_every_page_with_working_links(runs, tmp_path):
    out = tmp_path / "site"
    before = listing(runs)
    counts = export_site(runs, out, per_page=25)
    assert counts == {"runs": 3, "item_pages": 3 + 1}  # a: 60 rows in 3 pages; nested/b: 10 in 1; broken: none
    assert listing(runs) == before
    files = set(listing(out))
    assert {"index.html", "view.js", "compare.html", "runs/a/index.html", "runs/a/report.html",
            "runs/a/items-1.html", "runs/a/items-3.html", "runs/nested--b/items-1.html",
            "runs/broken/index.html"} <= files and ".build" not in files
    import re

    for page in out.rglob("*.html"):
        for href in re.findall(r'(?:href|src)="(?!data:)([^"#]+)"', page.read_text()):
            assert (page.parent / href).resolve().exists(), (page, href)
    assert "&lt;script&gt;window.__pwned" in (out / "runs" / "a" / "items-1.html").read_text()
    with pytest.raises(ValueError, match="inside the viewed folder"):
        export_site(runs, runs / "site")


def test_slugs_are_unique_folder_names():
    assert slugs(["a/b", "a--b", "."]) == {"a/b": "a--b", "a--b": "a--b-2", ".": "root"}


def test_cli_view(runs, tmp_path):
    cli = CliRunner()
    missing = cli.invoke(cli_app, ["view", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such folder" in missing.output
    out = cli.invoke(cli_app, ["view", str(runs), "--export", str(tmp_path / "site"), "--per-page", "100"])
    assert out.exit_code == 0, out.output
    assert "exported 3 runs (2 item pages)" in out.output
    assert (tmp_path / "site" / "runs" / "a" / "items-1.html").exists()


def test_host_check_and_warning(runs):
    assert host_warning("127.0.0.1") is None
    assert "anyone who can reach this address can read every run" in host_warning("0.0.0.0")
    c = TestClient(make_app(Viewer(runs)), base_url="http://evil.example")
    assert c.get("/").status_code == 400  # DNS rebinding: a foreign Host header is refused
    assert TestClient(make_app(Viewer(runs), allowed_hosts=["*"]), base_url="http://10.0.0.2").get("/").status_code == 200


def test_item_query_blank_filters_are_none():
    q = ItemQuery.model_validate({"model": "", "metric": "", "page": "2"})
    assert (q.model, q.metric, q.page, q.filters()) == (None, None, 2, {})


def test_open_read_only_creates_no_file(tmp_path):
    write_mock_run(tmp_path / "r", items=3)
    before = os.listdir(tmp_path / "r")
    with open_read_only(tmp_path / "r") as store:
        assert len(store.scores(store.run()["run_id"])) == 9
    assert os.listdir(tmp_path / "r") == before


@pytest.mark.parametrize(("module", "examples"), [("reasonscope.view.items", 2), ("reasonscope.view.site", 1),
                                                  ("reasonscope.view.export", 1)])
def test_docstring_examples(module, examples):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert (result.failed, result.attempted) == (0, examples)


def test_serve_announces_the_address_warns_off_loopback_and_opens_only_when_asked(runs, monkeypatch):
    import uvicorn

    from reasonscope.view import serve as serve_module

    served, opened = [], []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: served.append(sockets[0].getsockname()))
    monkeypatch.setattr(serve_module.webbrowser, "open", opened.append)
    lines: list[str] = []
    serve_module.serve(runs, announce=lines.append)
    port = served[0][1]
    assert served[0][0] == "127.0.0.1" and port > 0 and opened == []
    assert lines == [f"reasonscope view: 3 runs under {runs.resolve()} at http://127.0.0.1:{port}/ (Ctrl-C stops)"]
    lines.clear()
    serve_module.serve(runs, host="0.0.0.0", open_browser=True, announce=lines.append)
    assert lines[0].startswith("warning: serving on 0.0.0.0, not 127.0.0.1: anyone who can reach this address")
    assert opened == [f"http://127.0.0.1:{served[1][1]}/"]


def test_deep_pages_start_from_anchors_and_match_the_plain_order(tmp_path):
    write_mock_run(tmp_path / "runs" / "big", items=1600, created=T0)
    c = client(tmp_path / "runs")

    def keys(**params):
        p = c.get("/api/items", params={"run": "big", **params}).json()
        return p["total"], [r["key"] for r in p["rows"]]

    # past row 1,000: read from the anchor at or before the page's first row
    assert keys(per_page=100, page=11) == (1600, [f"arith/q{i:06d}" for i in range(1000, 1100)])
    assert keys(per_page=30, page=53) == (1600, [f"arith/q{i:06d}" for i in range(1560, 1590)])
    assert keys(per_page=30, page=54) == (1600, [f"arith/q{i:06d}" for i in range(1590, 1600)])
    assert keys(per_page=30, page=55) == (1600, [])
    # CQ = 1 on the items i % 3 != 2: the k-th of them (from 0) is item (k // 2) * 3 + k % 2
    total, rows = keys(metric="behavior.CQ", value="1", per_page=50, page=21)
    assert total == 1067 and rows == [f"arith/q{(k // 2) * 3 + k % 2:06d}" for k in range(1000, 1050)]
    assert keys(metric="behavior.CQ", value="1", per_page=50, page=3)[1][0] == "arith/q000150"  # an early page
