"""report.html in a real browser: Debian's headless Chromium driven through chromedriver (selenium).
`.ci/run` installs chromium and chromium-driver; without them this test is skipped with the reason."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.config import parse_plan
from reasonscope.runner import Runner

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                reason="needs Debian's chromium and chromium-driver (installed by .ci/run)")
EVIL = ("<script>window.__pwned = 1; document.body.insertAdjacentHTML('beforeend', '<p id=pwned>x</p>')</script>"
        "<img src=x onerror=\"window.__pwned = 2\">\nAnswer: 4")


def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download anything
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1300,2000",
                f"--user-data-dir={tmp_path / 'chrome-profile'}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(DRIVER), options=opts)


def test_report_renders_drills_down_and_never_runs_model_text(tmp_path):
    from selenium.webdriver.common.by import By

    plan = parse_plan({
        "experiment": {"name": "demo", "seed": 7, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "mock-a"}, {"spec": "mock/scripted", "name": "evil",
                                                                  "options": {"responses": [EVIL]}}],
        "datasets": [{"name": "synthetic", "format": "synthetic", "size": 2}],
        "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}},
                     "evidence": {"train": {"name": "tr", "format": "topics", "size": 60, "split": "train"},
                                  "test": {"name": "te", "format": "topics", "size": 8, "split": "test"},
                                  "n_permutations": 200}},
        "stats": {"n_resamples": 200},
    })
    Runner(plan, show_progress=False).run()
    html = tmp_path / "demo" / "report.html"
    drv = browser(tmp_path)
    try:
        drv.get(html.as_uri())
        assert drv.title.startswith("reasonscope report")
        severe = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
        items = drv.find_elements(By.CSS_SELECTOR, "details.item")
        assert len(items) == 6 and items[0].get_attribute("open") is None
        items[0].find_element(By.TAG_NAME, "summary").click()
        assert items[0].get_attribute("open") == "true"
        assert "Question:" in items[0].text and "Gold:" in items[0].text
        drv.find_element(By.ID, "expand-all").click()
        assert all(d.get_attribute("open") == "true" for d in drv.find_elements(By.CSS_SELECTOR, "details.item"))
        # the model's <script> and <img onerror> are shown as text, never executed
        assert drv.execute_script("return window.__pwned === undefined")
        assert not drv.find_elements(By.ID, "pwned")
        assert "<script>window.__pwned" in drv.find_element(By.TAG_NAME, "body").text
        assert drv.find_elements(By.CSS_SELECTOR, "details.evidence")
        drv.save_screenshot(str(tmp_path / "demo" / "report_screenshot.png"))
    finally:
        drv.quit()
    assert (tmp_path / "demo" / "report_screenshot.png").stat().st_size > 10_000
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert summary["behavior"]["metrics"]["evil"]["CQ"]["value"] is not None


def test_cli_report_from_browser_run_dir_is_stable(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "1", "input": "2+2?", "target": 4, "prediction": EVIL}) + "\n")
    assert CliRunner().invoke(app, ["score", "-i", str(path), "--output-dir", str(tmp_path), "--name", "x"]).exit_code == 0
    drv = browser(tmp_path)
    try:
        drv.get((tmp_path / "x" / "report.html").as_uri())
        assert drv.execute_script("return window.__pwned === undefined")
    finally:
        drv.quit()
