"""``reasonscope view`` in a real browser: the live server (uvicorn, in a thread) driven by Debian's headless
Chromium through chromedriver (selenium), on a folder of mock runs. Each page loads without a console
error, the Runs filters and sorting work, ticked runs open the Compare page, a number of the Run page links
to its items, the Items filters work, and a model output holding ``<script>`` stays inert text.

With ``REASONSCOPE_ARTIFACTS=FOLDER`` the test saves the docs page's screenshots there
(``REASONSCOPE_ARTIFACTS=docs/images python -m pytest tests/test_view_browser.py``).
`.ci/run` installs chromium and chromium-driver; without them the test is skipped with the reason."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from reasonscope.view.mock_runs import write_mock_run  # noqa: E402

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = [pytest.mark.slow,  # a real server and browser: tens of seconds; .ci/run runs it
              pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                 reason="needs Debian's chromium and chromium-driver (installed by .ci/run)")]
EVIL = ("<script>window.__pwned = 1; document.body.insertAdjacentHTML('beforeend', '<p id=pwned>x</p>')</script>"
        "<img src=x onerror=\"window.__pwned = 2\">\nAnswer: 1")
T0 = 1_790_000_000.0


@pytest.fixture
def served(tmp_path):
    """The viewer of three mock runs (one with a damaged store), served on 127.0.0.1 and a free port."""
    import uvicorn

    from reasonscope.registry import all_families
    from reasonscope.view.app import make_app
    from reasonscope.view.serve import address, bind
    from reasonscope.view.site import Viewer

    root = tmp_path / "runs"
    write_mock_run(root / "gsm8k-llama", items=120, models=("llama-3-8b", "qwen-2-7b"), created=T0,
                   outputs={0: EVIL}, dataset="gsm8k")
    write_mock_run(root / "ablations" / "gsm8k-cot", items=40, models=("llama-3-8b",), created=T0 + 86400,
                   dataset="gsm8k", exit_code=3)
    (root / "broken").mkdir()
    (root / "broken" / "store.sqlite").write_bytes(b"not a database" * 64)
    viewer = Viewer(root, families=all_families("summary"))
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(make_app(viewer), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield address(sock)
    server.should_exit = True
    thread.join(10)
    viewer.close()



def test_viewer_pages_in_a_browser(served, tmp_path, chromium):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    shots = Path(os.environ["REASONSCOPE_ARTIFACTS"]) if os.environ.get("REASONSCOPE_ARTIFACTS") else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    drv = chromium("1300,900")

    def severe():
        return [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]

    def navigating(element):
        """Click ``element`` and wait until the browser has left the page (a loaded CI machine is slow)."""
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        old = drv.find_element(By.TAG_NAME, "html")
        element.click()
        WebDriverWait(drv, 30).until(ec.staleness_of(old))

    def shown_keys():
        return [r.get_attribute("data-key") for r in drv.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
                if r.is_displayed()]

    try:
        # Runs: newest first, the damaged store an error on its row; CQ 79 / 120 (mock interval +- 1.96 se)
        drv.get(served)
        assert drv.title.startswith("reasonscope view")
        assert shown_keys() == ["ablations/gsm8k-cot", "gsm8k-llama", "broken"]
        assert "cannot read this run" in drv.find_element(By.CSS_SELECTOR, 'tr[data-key="broken"]').text
        assert "0.66 [0.57, 0.74]" in drv.find_element(By.CSS_SELECTOR, 'tr[data-key="gsm8k-llama"]').text
        drv.save_screenshot(str(shots / "view-runs.png"))
        # filters and sorting
        drv.find_element(By.ID, "f-model").send_keys("QWEN")
        assert shown_keys() == ["gsm8k-llama"] and drv.find_element(By.ID, "shown-count").text == "1"
        drv.find_element(By.ID, "f-model").clear()
        drv.find_element(By.ID, "f-model").send_keys(" ")  # an input event with nothing to match: every run
        assert len(shown_keys()) == 3
        drv.execute_script("const e = document.getElementById('f-since'); e.value = '2026-09-22';"
                           "e.dispatchEvent(new Event('change'))")
        assert shown_keys() == ["ablations/gsm8k-cot"]
        drv.execute_script("const e = document.getElementById('f-since'); e.value = '';"
                           "e.dispatchEvent(new Event('change'))")
        drv.find_element(By.CSS_SELECTOR, 'th[data-sort="key"]').click()
        assert shown_keys() == ["ablations/gsm8k-cot", "broken", "gsm8k-llama"]
        drv.find_element(By.CSS_SELECTOR, 'th[data-sort="key"]').click()
        assert shown_keys() == ["gsm8k-llama", "broken", "ablations/gsm8k-cot"]
        # Compare: tick two runs
        for key in ("gsm8k-llama", "ablations/gsm8k-cot"):
            drv.find_element(By.CSS_SELECTOR, f'input[value="{key}"]').click()
        navigating(drv.find_element(By.ID, "compare-button"))
        assert "/compare?run=" in drv.current_url
        table = drv.find_element(By.ID, "side-by-side").text
        assert "gsm8k-llama" in table and "ablations/gsm8k-cot" in table and "0.66 [0.57, 0.74] n=120" in table
        assert drv.find_elements(By.ID, "paired-table") or drv.find_elements(By.ID, "paired-missing")
        drv.save_screenshot(str(shots / "view-compare.png"))
        # Run: a number links to its items; the report in its frame
        drv.get(served)
        navigating(drv.find_element(By.LINK_TEXT, "gsm8k-llama"))
        assert drv.find_element(By.TAG_NAME, "h1").text == "Run gsm8k-llama"
        drv.save_screenshot(str(shots / "view-run.png"))
        drv.switch_to.frame(drv.find_element(By.ID, "report-frame"))
        assert "Behaviour metrics per model" in drv.find_element(By.TAG_NAME, "body").text
        drv.switch_to.default_content()
        link = drv.find_element(By.CSS_SELECTOR, '#metric-index a[href*="metric=behavior.CQ"][href*="model=qwen-2-7b"]')
        assert link.text == "0.658"  # 79 of 120 right: every third item wrong, and item 0 (the script)
        navigating(link)
        assert "120 rows matching" in drv.find_element(By.ID, "total").text
        assert Select(drv.find_element(By.ID, "f-metric")).first_selected_option.text == "behavior.CQ"
        # Items: filters, paging, and the model's script shown as text
        Select(drv.find_element(By.ID, "f-value")).select_by_value("0")
        navigating(drv.find_element(By.ID, "apply-filters"))
        assert drv.find_element(By.ID, "total").text.startswith("41 rows matching")  # items 0 and 2, 5, ..., 119
        first = drv.find_elements(By.CSS_SELECTOR, "details.item")[0]
        assert first.find_element(By.TAG_NAME, "summary").text == "gsm8k/q000000 · qwen-2-7b"
        assert "<script>window.__pwned" in first.find_element(By.CSS_SELECTOR, "pre.output").text
        assert drv.execute_script("return window.__pwned === undefined") and not drv.find_elements(By.ID, "pwned")
        drv.save_screenshot(str(shots / "view-items.png"))
        assert not drv.find_elements(By.ID, "next")  # one page of 41
        drv.get(served + "items?run=gsm8k-llama&per_page=100")  # 240 rows: 120 items, 2 models
        navigating(drv.find_element(By.ID, "next"))
        assert "page 2 of 3" in drv.page_source
        assert drv.find_elements(By.CSS_SELECTOR, "details.item summary")[0].text == "gsm8k/q000100 · llama-3-8b"
        drv.get(served + "run?run=../../etc")
        assert "'..' is refused" in drv.find_element(By.ID, "error").text
        assert [e for e in severe() if "404" not in e["message"]] == []  # only the refused run's own 404
    finally:
        drv.quit()
