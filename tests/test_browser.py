"""report.html in a real browser: Debian's headless Chromium driven through chromedriver (selenium).
`.ci/run` installs chromium and chromium-driver; without them this test is skipped with the reason."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import parse_plan

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                reason="needs Debian's chromium and chromium-driver (installed by .ci/run)")
EVIL = ("<script>window.__pwned = 1; document.body.insertAdjacentHTML('beforeend', '<p id=pwned>x</p>')</script>"
        "<img src=x onerror=\"window.__pwned = 2\">\nAnswer: 4")



def test_report_renders_drills_down_and_never_runs_model_text(tmp_path, chromium):
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
    drv = chromium("1300,2000")
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
        for width in WIDTHS:  # a laptop and a phone: screenshots, and the layout checks of LAYOUT_CHECK
            drv.set_window_size(width, 1000)
            drv.get(html.as_uri())
            assert layout_problems(drv) == {"overflow": [], "distorted": [], "small_text": [], "empty_plots": [],
                                        "clipped": []}
            height = drv.execute_script("return document.documentElement.scrollHeight")
            drv.set_window_size(width, min(height, 12000))
            assert _save_screenshot(drv, tmp_path, f"report_mock_{width}px.png").stat().st_size > 20_000
    finally:
        drv.quit()
    assert (tmp_path / "demo" / "report_screenshot.png").stat().st_size > 10_000
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert summary["behavior"]["metrics"]["evil"]["CQ"]["value"] is not None


def test_cli_report_from_browser_run_dir_is_stable(tmp_path, chromium):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "1", "input": "2+2?", "target": 4, "prediction": EVIL}) + "\n")
    assert CliRunner().invoke(app, ["score", "-i", str(path), "--output-dir", str(tmp_path), "--name", "x"]).exit_code == 0
    drv = chromium("1300,2000")
    try:
        drv.get((tmp_path / "x" / "report.html").as_uri())
        assert drv.execute_script("return window.__pwned === undefined")
    finally:
        drv.quit()


WIDTHS = (1280, 390)  # a laptop and a phone
MIN_TEXT_PX = 10
LAYOUT_CHECK = """
const W = window.innerWidth, out = {overflow: [], distorted: [], small_text: [], empty_plots: [], clipped: []};
// on a laptop every table fits its page: a table that scrolls hides columns (the attack rates' last ones)
if (W >= 1000) for (const wrap of document.querySelectorAll('.table-wrap'))
  if (wrap.scrollWidth > wrap.clientWidth + 1)
    out.clipped.push((wrap.previousElementSibling ? wrap.previousElementSibling.textContent.trim().slice(0, 40) : 'table')
                     + ' ' + wrap.scrollWidth + ' > ' + wrap.clientWidth);
const doc = document.documentElement;
if (doc.scrollWidth > W) out.overflow.push('page ' + doc.scrollWidth + ' > ' + W);
for (const img of document.images) {
  const r = img.getBoundingClientRect();
  if (!img.naturalWidth || r.width < 2) { out.empty_plots.push(img.alt); continue; }
  const natural = img.naturalWidth / img.naturalHeight, shown = r.width / r.height;
  if (Math.abs(shown / natural - 1) > 0.02 || r.width > img.naturalWidth + 1)
    out.distorted.push(img.alt + ' ' + img.naturalWidth + 'x' + img.naturalHeight + ' drawn ' +
                       Math.round(r.width) + 'x' + Math.round(r.height));
  if (r.right > W + 1) out.overflow.push(img.alt + ' right edge ' + Math.round(r.right));
}
for (const div of document.querySelectorAll('.plots')) if (!div.querySelector('img')) out.empty_plots.push('empty .plots');
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode, el = node.parentElement;
  if (!node.textContent.trim() || !el || !el.getClientRects().length) continue;
  const size = parseFloat(getComputedStyle(el).fontSize);
  if (size < MIN_PX) out.small_text.push(el.tagName + ' ' + size + 'px: ' + node.textContent.trim().slice(0, 40));
}
return out;
"""


def layout_problems(drv) -> dict[str, list[str]]:
    """What is wrong with the page's layout at the window's width: horizontal overflow of the page,
    images drawn at another aspect ratio than their natural one or larger than natural, visible text
    under MIN_TEXT_PX pixels, plots with no image, and (at a laptop's width) tables wider than the page,
    whose last columns only a sideways scroll shows."""
    return drv.execute_script(LAYOUT_CHECK.replace("MIN_PX", str(MIN_TEXT_PX)))


def _save_screenshot(drv, tmp_path, name: str) -> Path:
    """The whole page as PNG into the test's tmp dir and, when REASONSCOPE_ARTIFACTS names a folder, there too."""
    path = tmp_path / name
    drv.save_screenshot(str(path))
    if os.environ.get("REASONSCOPE_ARTIFACTS"):
        folder = Path(os.environ["REASONSCOPE_ARTIFACTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / name)
    return path


@pytest.mark.slow
def test_five_family_report_fits_a_phone_and_a_laptop(tmp_path, five_family_run, chromium):
    from selenium.webdriver.common.by import By

    html = five_family_run / "report.html"
    drv = chromium("1300,2000")
    try:
        for width in WIDTHS:
            drv.set_window_size(width, 1000)
            drv.get(html.as_uri())
            assert drv.execute_script("return window.innerWidth") == width
            cards = drv.find_elements(By.CSS_SELECTOR, ".card")
            assert [c.get_attribute("id") for c in cards] == [
                "card-behavior", "card-evidence", "card-attributes", "card-information", "card-attack"]
            assert all(c.is_displayed() and c.size["width"] <= width and "95% CI" in c.text for c in cards)
            # tables scroll inside their own container; the page itself never scrolls sideways
            assert drv.execute_script("return document.documentElement.scrollWidth") <= width
            assert drv.execute_script("return document.body.scrollWidth") <= width
            images = drv.find_elements(By.TAG_NAME, "img")
            assert len(images) >= 8
            broken = drv.execute_script("return Array.from(document.images).filter("
                                        "i => !i.complete || i.naturalWidth === 0).map(i => i.alt)")
            assert not broken, broken
            assert all(i.size["width"] <= width for i in images)
            headers = [h.text for h in drv.find_elements(By.TAG_NAME, "th")]
            assert any(h.startswith("Correctness (CQ) [95% CI]") for h in headers)
            assert not [h for h in headers if "setting_" in h]
            height = drv.execute_script("return document.documentElement.scrollHeight")
            drv.set_window_size(width, min(height, 12000))
            assert layout_problems(drv) == {"overflow": [], "distorted": [], "small_text": [], "empty_plots": [],
                                        "clipped": []}
            shot = _save_screenshot(drv, tmp_path, f"report_five_families_{width}px.png")
            assert shot.stat().st_size > 50_000
        severe = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
    finally:
        drv.quit()
