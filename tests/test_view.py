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
from reasonscope.registry import all_families  # noqa: E402
from reasonscope.storage.store import Store  # noqa: E402
from reasonscope.view import ItemQuery, RunNotFound, Viewer, discover_runs  # noqa: E402
from reasonscope.view.app import filter_rows, make_app  # noqa: E402
from reasonscope.view.export import export_site, slugs  # noqa: E402
from reasonscope.view.items import RowCount, count_rows  # noqa: E402
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
    return TestClient(make_app(Viewer(root, families=all_families("summary"))), base_url="http://127.0.0.1")


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
    from reasonscope.storage.rundir import RunDirLock

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


def _drop_m2_cq(writer: Store) -> None:
    """The writer deletes model m2's 30 CQ scores of run a and commits."""
    writer.conn.execute("DELETE FROM scores WHERE metric='CQ' AND model='m2'")
    writer.conn.commit()


def test_an_items_page_agrees_with_its_count_when_a_writer_commits_between_the_reads(runs, monkeypatch):
    import reasonscope.view.items as items

    writer = Store(runs / "a")  # WAL mode: the viewer reads through -wal and -shm, a writer goes on
    page_keys = items.page_keys

    def commit_then_page(*args, **kwargs):  # after the count, before the page's rows
        _drop_m2_cq(writer)
        return page_keys(*args, **kwargs)

    monkeypatch.setattr(items, "page_keys", commit_then_page)
    query = ItemQuery(metric="behavior.CQ", per_page=50, page=2)
    with open_read_only(runs / "a") as store:  # rows 50..59 of 60: m2's items 20..29, each with its CQ score
        page = items.item_page(store, "a", query)
    assert (page.total, page.pages) == (60, 2)
    assert [(r.model, r.key) for r in page.rows] == [("m2", f"arith/q{i:06d}") for i in range(20, 30)]
    assert all("behavior.CQ" in [s.metric for s in r.scores] for r in page.rows)
    monkeypatch.setattr(items, "page_keys", page_keys)
    with open_read_only(runs / "a") as store:  # the next read sees the commit
        assert items.item_page(store, "a", query.model_copy(update={"page": 1})).total == 30
    writer.close()


def test_a_kept_count_is_not_used_for_a_snapshot_taken_after_a_commit(runs, monkeypatch):
    import reasonscope.view.site as site

    viewer = Viewer(runs, families=())
    query = ItemQuery(metric="behavior.CQ", per_page=50)
    writer = Store(runs / "a")
    assert viewer.items("a", query).total == 60  # counted, and kept under the store's fingerprint
    snapshot = site.read_snapshot

    def commit_then_snapshot(conn):  # after the viewer read the fingerprint, before its read transaction
        _drop_m2_cq(writer)
        return snapshot(conn)

    monkeypatch.setattr(site, "read_snapshot", commit_then_snapshot)
    page = viewer.items("a", query)  # the kept 60 (m1's 30 and m2's 30) would page rows that are gone
    assert page.total == 30 and [(r.model, r.key) for r in page.rows] == [("m1", f"arith/q{i:06d}") for i in range(30)]
    writer.close()
    viewer.close()


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
    rows = Viewer(runs, families=all_families("summary")).rows()
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
    counts = export_site(runs, out, families=all_families("summary"), per_page=25, pairs=["a..nested/b"])
    # a: 60 rows in 3 pages; nested/b: 10 in 1; broken: none. Behind the numbers (CQ, LS, SS of each model):
    # a: 6 numbers of 30 rows, 2 pages each; nested/b: 3 numbers of 10 rows, 1 page each
    assert counts == {"runs": 3, "item_pages": 3 + 1, "number_pages": 6 * 2 + 3, "pairs": 1}
    assert listing(runs) == before
    files = set(listing(out))
    assert {"index.html", "view.js", "compare.html", "compare-a-vs-nested--b.html", "runs/a/index.html",
            "runs/a/report.html", "runs/a/items-1.html", "runs/a/items-3.html", "runs/a/items-behavior.CQ-m1-1.html",
            "runs/a/items-behavior.CQ-m1-2.html", "runs/a/items-behavior.SS-m2-2.html",
            "runs/nested--b/items-1.html", "runs/nested--b/items-behavior.LS-mock-a-1.html",
            "runs/broken/index.html"} <= files and ".build" not in files
    # index, compare, the pair; 3 Run pages; 2 reports; 4 + 15 Items pages
    assert len([f for f in files if f.endswith(".html")]) == 3 + 3 + 2 + 4 + 15
    import re

    for page in out.rglob("*.html"):
        for href in re.findall(r'(?:href|src)="(?!data:)([^"#]+)"', page.read_text()):
            assert (page.parent / href).resolve().exists(), (page, href)
    run_page = (out / "runs" / "a" / "index.html").read_text()
    assert '<a href="../../runs/a/items-behavior.CQ-m1-1.html">0.633</a>' in run_page  # each number: its items
    assert run_page.count('<a href="../../runs/a/items-behavior.') == 6
    number = (out / "runs" / "a" / "items-behavior.CQ-m1-2.html").read_text()
    assert "30 rows matching model = m1, metric = behavior.CQ" in number and "page 2 of 2" in number
    assert number.count("· m1</summary>") == 5 and "· m2</summary>" not in number  # rows 26..30 of m1
    assert 'id="prev" href="../../runs/a/items-behavior.CQ-m1-1.html"' in number
    for page in ("index.html", "compare.html"):
        assert '<a href="compare-a-vs-nested--b.html">a → nested/b</a>' in (out / page).read_text()
    pair = (out / "compare-a-vs-nested--b.html").read_text()
    assert "Paired comparison (reasonscope compare a nested/b)" in pair
    assert 'id="paired-table"' in pair or 'id="paired-missing"' in pair
    assert "&lt;script&gt;window.__pwned" in (out / "runs" / "a" / "items-1.html").read_text()
    with pytest.raises(ValueError, match="inside the viewed folder"):
        export_site(runs, runs / "site", families=())
    with pytest.raises(ValueError, match=r"--export-pair 'a\.\.a': expected BASE\.\.NEW, two different runs of the "
                                         r"folder \(nested/b, a, broken\)"):
        export_site(runs, tmp_path / "site2", families=(), pairs=["a..a"])
    assert not (tmp_path / "site2").exists()  # refused before anything is written


def test_exported_pair_holds_reasonscope_compare_numbers(tmp_path):
    pytest.importorskip("reasonscope.compare")
    root = tmp_path / "runs"
    write_mock_run(root / "base", items=40, created=T0)
    write_mock_run(root / "new", items=40, created=T0 + DAY, outputs={i: "Answer: -1" for i in range(0, 40, 4)})
    live = client(root).get("/compare", params=[("run", "base"), ("run", "new")]).text
    export_site(root, tmp_path / "site", families=all_families("summary"), pairs=[("base", "new")])
    exported = (tmp_path / "site" / "compare-base-vs-new.html").read_text()
    # two runs: the link of the pair leads to its paired comparison, not to the page of all runs
    assert '<a href="compare-base-vs-new.html">base → new</a>' in (tmp_path / "site" / "index.html").read_text()

    def table(page: str) -> str:
        return page[page.index('<table id="paired-table">'):page.index("</table>", page.index('id="paired-table"'))]

    assert "<td>behavior.CQ</td>" in table(live) and table(exported) == table(live)


def test_parse_pair_accepts_keys_holding_dots():
    from reasonscope.view.export import parse_pair

    assert parse_pair("a..b..c", ["a..b", "c", "x"]) == ("a..b", "c")
    with pytest.raises(ValueError, match="expected BASE..NEW"):
        parse_pair("a..b", ["a"])


def test_slugs_are_unique_folder_names():
    assert slugs(["a/b", "a--b", "."]) == {"a/b": "a--b", "a--b": "a--b-2", ".": "root"}


def test_cli_view(runs, tmp_path):
    cli = CliRunner()
    missing = cli.invoke(cli_app, ["view", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such folder" in missing.output
    out = cli.invoke(cli_app, ["view", str(runs), "--export", str(tmp_path / "site"), "--per-page", "100",
                               "--export-pair", "nested/b..a"])
    assert out.exit_code == 0, out.output
    assert "exported 3 runs (2 item pages, 9 behind the runs' numbers, 1 paired comparisons)" in out.output
    assert (tmp_path / "site" / "runs" / "a" / "items-1.html").exists()
    assert (tmp_path / "site" / "compare-nested--b-vs-a.html").exists()
    bad = cli.invoke(cli_app, ["view", str(runs), "--export", str(tmp_path / "site3"), "--export-pair", "a..zz"])
    assert bad.exit_code == 2 and "--export-pair 'a..zz': expected BASE..NEW" in bad.output
    alone = cli.invoke(cli_app, ["view", str(runs), "--export-pair", "a..nested/b"])
    assert alone.exit_code == 2 and "use it with --export FOLDER" in alone.output


def test_host_check_and_warning(runs):
    assert host_warning("127.0.0.1") is None
    assert "anyone who can reach this address can read every run" in host_warning("0.0.0.0")
    c = TestClient(make_app(Viewer(runs, families=())), base_url="http://evil.example")
    assert c.get("/").status_code == 400  # DNS rebinding: a foreign Host header is refused
    assert TestClient(make_app(Viewer(runs, families=()), allowed_hosts=["*"]), base_url="http://10.0.0.2").get("/").status_code == 200


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
                                                  ("reasonscope.view.export", 3), ("reasonscope.view.pages", 1)])
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
    serve_module.serve(runs, families=(), announce=lines.append)
    port = served[0][1]
    assert served[0][0] == "127.0.0.1" and port > 0 and opened == []
    assert lines == [f"reasonscope view: 3 runs under {runs.resolve()} at http://127.0.0.1:{port}/ (Ctrl-C stops)"]
    lines.clear()
    serve_module.serve(runs, families=(), host="0.0.0.0", open_browser=True, announce=lines.append)
    assert lines[0].startswith("warning: serving on 0.0.0.0, not 127.0.0.1: anyone who can reach this address")
    assert opened == [f"http://127.0.0.1:{served[1][1]}/"]


def big_run(tmp_path, items: int = 1600) -> Path:
    """A run of ``items`` items and one model, item 4's generation failed and item 7's pending."""
    write_mock_run(tmp_path / "runs" / "big", items=items, created=T0)
    conn = sqlite3.connect(tmp_path / "runs" / "big" / "store.sqlite")
    conn.execute("UPDATE generations SET error='refused' WHERE key='mock-mock-a-q000004'")
    conn.execute("DELETE FROM generations WHERE key='mock-mock-a-q000007'")
    conn.commit()
    conn.close()
    return tmp_path / "runs"


def q(*numbers) -> list[str]:
    return [f"arith/q{i:06d}" for i in numbers]


# CQ = 1 on the items i % 3 != 2 (1,067 of 1,600): the k-th of them (from 0) is item (k // 2) * 3 + k % 2;
# CQ = 0 on i % 3 == 2 (533); SS = (i % 10) / 10 is 0 on i % 10 == 0 (160), "other" on the 1,440 others.
PAGES = [
    ({}, 100, 1, 1600, q(*range(100))),
    ({}, 100, 8, 1600, q(*range(700, 800))),  # a middle page
    ({}, 100, 9, 1600, q(*range(800, 900))),  # the first page of the second half: read backwards from the end
    ({}, 30, 54, 1600, q(*range(1590, 1600))),  # the last page, part full
    ({}, 30, 55, 1600, []),  # past the end
    ({"model": "mock-a"}, 100, 16, 1600, q(*range(1500, 1600))),
    ({"model": "other"}, 50, 1, 0, []),
    ({"metric": "behavior.CQ", "model": "mock-a"}, 100, 11, 1600, q(*range(1000, 1100))),  # a Run page's number
    ({"metric": "behavior.CQ", "value": "1"}, 50, 1, 1067, q(*((k // 2) * 3 + k % 2 for k in range(50)))),
    ({"metric": "behavior.CQ", "value": "1"}, 50, 11, 1067, q(*((k // 2) * 3 + k % 2 for k in range(500, 550)))),
    ({"metric": "behavior.CQ", "value": "1"}, 50, 22, 1067, q(*((k // 2) * 3 + k % 2 for k in range(1050, 1067)))),
    ({"metric": "behavior.CQ", "value": "0"}, 50, 11, 533, q(*range(1502, 1600, 3))),  # 33 rows: k = 500..532
    ({"metric": "behavior.CQ", "value": "0"}, 50, 12, 533, []),
    ({"metric": "behavior.SS", "value": "other"}, 9, 80, 1440, q(*range(791, 800))),  # rows 711..719
    ({"metric": "behavior.SS", "value": "other"}, 9, 81, 1440, q(*range(801, 810))),  # rows 720..728, backwards
    ({"metric": "behavior.SS", "value": "1"}, 50, 1, 0, []),
    ({"metric": "behavior.LS", "value": "na"}, 100, 16, 1600, q(*range(1500, 1600))),
    ({"outcome": "answered"}, 5, 1, 1598, q(0, 1, 2, 3, 5)),  # item 4 failed
    ({"outcome": "answered"}, 5, 2, 1598, q(6, 8, 9, 10, 11)),  # item 7 pending
    ({"outcome": "answered"}, 100, 8, 1598, q(*range(702, 802))),  # a middle page: rows 700..799
    ({"outcome": "answered"}, 100, 9, 1598, q(*range(802, 902))),  # rows 800..899, read backwards
    ({"outcome": "answered"}, 100, 16, 1598, q(*range(1502, 1600))),
    ({"outcome": "answered", "model": "mock-a"}, 100, 17, 1598, []),
    ({"outcome": "failed"}, 50, 1, 1, q(4)),
    ({"outcome": "failed"}, 50, 2, 1, []),
    ({"outcome": "pending"}, 50, 1, 1, q(7)),
    ({"metric": "behavior.CQ", "outcome": "pending"}, 50, 1, 1, q(7)),
    ({"metric": "behavior.CQ", "value": "1", "outcome": "answered"}, 4, 2, 1065, q(9, 10, 12, 13)),  # not 4, 7
    ({"metric": "behavior.CQ", "outcome": "answered"}, 100, 1, 1598, q(0, 1, 2, 3, 5, 6, *range(8, 102))),
    ({"metric": "behavior.CQ", "outcome": "answered"}, 100, 8, 1598, q(*range(702, 802))),
    ({"metric": "behavior.CQ", "outcome": "answered"}, 100, 9, 1598, q(*range(802, 902))),  # backwards
    ({"metric": "behavior.CQ", "outcome": "answered", "model": "mock-a"}, 100, 16, 1598, q(*range(1502, 1600))),
    ({"metric": "behavior.CQ", "outcome": "failed"}, 50, 1, 1, q(4)),
    ({"metric": "behavior.CQ", "outcome": "pending"}, 50, 1, 1, q(7)),
]


SCHEMA_6 = ("DROP TRIGGER scores_slotted", "DROP TRIGGER scores_replacing", "DROP TRIGGER scores_counted",
            "DROP TRIGGER scores_uncounted", "DROP TRIGGER scores_recounted", "DROP TRIGGER run_generations_rescored",
            "DROP TRIGGER run_generations_rescored_linked", "DROP TRIGGER run_generations_rescored_unlinked",
            "DROP TRIGGER run_generations_slotted", "DROP TRIGGER run_generations_replacing",
            "DROP TRIGGER run_generations_counted", "DROP TRIGGER run_generations_uncounted",
            "DROP TRIGGER run_generations_recounted", "DROP INDEX run_generations_by_slot", "DROP TABLE link_counts",
            "DROP TABLE link_slots", "ALTER TABLE run_generations DROP COLUMN slot",
            "DROP INDEX scores_by_slot", "DROP TABLE score_counts", "DROP TABLE score_slots",
            "ALTER TABLE scores DROP COLUMN slot", "ALTER TABLE scores DROP COLUMN outcomes",
            "CREATE INDEX scores_by_value ON scores(run_id, family, metric, model, item_id, value)")
SCHEMA_5 = ("DROP INDEX scores_by_value", "DROP INDEX run_generations_outcome", "DROP INDEX run_generations_by_key",
            "DROP TRIGGER run_generations_linked", "DROP TRIGGER generations_stored", "DROP TRIGGER generations_changed",
            "DROP TRIGGER generations_deleted", "ALTER TABLE run_generations DROP COLUMN outcome",
            "ALTER TABLE run_generations DROP COLUMN item_key")


def downgrade(conn: sqlite3.Connection, schema: int) -> None:
    """Take a store of the present schema (6) back to ``schema`` (5 or 4), as an older reasonscope left it."""
    for statement in (*SCHEMA_6, *(SCHEMA_5 if schema == 4 else ()), f"PRAGMA user_version = {schema}"):
        conn.execute(statement)


@pytest.mark.parametrize(("schema", "variants"), [(6, False), (5, False), (4, False), (6, True)])
def test_counts_and_pages_of_every_filter_by_sql(tmp_path, schema, variants):
    """Hand-counted totals and rows: first, middle, last and past-the-end pages of every kind of filter, on
    a store of the present schema, of schemas 5 and 4 (without the filter columns and indexes they lack) and
    with a second variant on some items."""
    root = big_run(tmp_path)
    conn = sqlite3.connect(root / "big" / "store.sqlite")
    if schema < 6:
        downgrade(conn, schema)
    if variants:  # a paraphrase of items 0..9 (item 1's pending): each item is still one row of the page
        run_id = conn.execute("SELECT run_id FROM runs").fetchone()[0]
        conn.executemany("INSERT INTO run_generations(run_id, model, dataset, item_id, variant, sample, key, "
                         "max_tokens) VALUES (?,?,?,?,?,?,?,?)",
                         [(run_id, "mock-a", "arith", f"q{i:06d}", "paraphrase-1", 0, f"mock-mock-a-q{i:06d}"
                           if i != 1 else "missing", 64) for i in range(10)])
    conn.commit()
    conn.close()
    c = client(root)
    for filters, per_page, page, total, rows in PAGES:
        if variants and filters.get("outcome") == "pending":  # item 1's paraphrase is pending too
            total, rows = 2, q(1, 7)
        p = c.get("/api/items", params={"run": "big", **filters, "per_page": per_page, "page": page}).json()
        assert (p["total"], [r["key"] for r in p["rows"]]) == (total, rows), (filters, per_page, page)
        assert p["pages"] == max(1, -(-total // per_page))
    if variants:
        first = c.get("/api/items", params={"run": "big", "per_page": 1}).json()["rows"][0]
        assert [(g["variant"], g["done"]) for g in first["generations"]] == [("original", True), ("paraphrase-1", True)]
        with open_read_only(root / "big") as store:
            assert count_rows(store, store.run()["run_id"], ItemQuery()) == RowCount(1600, one_row_each=False)
    else:
        with open_read_only(root / "big") as store:
            assert count_rows(store, store.run()["run_id"], ItemQuery()) == RowCount(1600, one_row_each=True)


def pairs(model: str, *numbers) -> list[tuple[str, str]]:
    return [(model, k) for k in q(*numbers)]


# two models on 30 items, mock-b's item 1 failed: pages that end in one model and go on in the next
ACROSS = [
    ({}, 20, 2, 60, pairs("mock-a", *range(20, 30)) + pairs("mock-b", *range(10))),
    ({"metric": "behavior.CQ"}, 20, 2, 60, pairs("mock-a", *range(20, 30)) + pairs("mock-b", *range(10))),
    ({"metric": "behavior.CQ", "outcome": "answered"}, 20, 2, 59,
     pairs("mock-a", *range(20, 30)) + pairs("mock-b", 0, *range(2, 11))),
    ({"metric": "behavior.CQ", "outcome": "answered"}, 20, 3, 59, pairs("mock-b", *range(11, 30))),  # the last page
    ({"metric": "behavior.CQ", "value": "0", "outcome": "answered"}, 15, 1, 20,
     pairs("mock-a", *range(2, 30, 3)) + pairs("mock-b", *range(2, 17, 3))),
    ({"outcome": "answered"}, 25, 2, 59, pairs("mock-a", *range(25, 30)) + pairs("mock-b", 0, *range(2, 21))),
    ({"outcome": "failed"}, 10, 1, 1, pairs("mock-b", 1)),
    ({"outcome": "failed", "metric": "behavior.SS"}, 10, 1, 1, pairs("mock-b", 1)),
    ({"outcome": "answered", "model": "mock-b"}, 10, 3, 29, pairs("mock-b", *range(21, 30))),
]


@pytest.mark.parametrize("schema", [6, 5, 4])
def test_pages_go_on_from_one_model_to_the_next(tmp_path, schema):
    write_mock_run(tmp_path / "runs" / "two", items=30, models=("mock-a", "mock-b"), created=T0)
    conn = sqlite3.connect(tmp_path / "runs" / "two" / "store.sqlite")
    conn.execute("UPDATE generations SET error='refused' WHERE key='mock-mock-b-q000001'")
    if schema < 6:
        downgrade(conn, schema)
    conn.commit()
    conn.close()
    c = client(tmp_path / "runs")
    for filters, per_page, page, total, rows in ACROSS:
        p = c.get("/api/items", params={"run": "two", **filters, "per_page": per_page, "page": page}).json()
        assert (p["total"], [(r["model"], r["key"]) for r in p["rows"]]) == (total, rows), (filters, page)


def test_older_stores_are_an_error_on_their_row(runs):
    conn = sqlite3.connect(runs / "a" / "store.sqlite")
    conn.execute("PRAGMA user_version = 3")
    conn.close()
    row = {r["key"]: r for r in client(runs).get("/api/runs").json()}["a"]
    assert "written by an older reasonscope (store schema 3; the viewer reads 4 to" in row["error"]
