"""A real headless Chromium (Debian's ``chromium`` + ``chromium-driver``) driven by Selenium for the tests.

Every page load first installs a page-side hook (before any page script): ``window.__xss`` stays 0 unless
a hostile fact text manages to run script, and ``window.__csp`` collects Content-Security-Policy
violations, so a blocked inline script is caught as well as an executed one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("GRAYMATTER_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("GRAYMATTER_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
HOOK = """
window.__xss = 0;
window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline'));
});
"""


def artefacts_dir() -> Path:
    """Where screenshots go: ``$GRAYMATTER_TEST_ARTEFACTS`` or ``tmp/artefacts`` in the repository."""
    root = Path(os.environ.get("GRAYMATTER_TEST_ARTEFACTS", Path(__file__).parents[4] / "tmp" / "artefacts"))
    path = root / "dashboard"
    path.mkdir(parents=True, exist_ok=True)
    return path


def start_chromium(width: int = 1280, height: int = 900) -> Any:
    """A headless Chromium with the page-side hook installed on every new document."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not (Path(p).exists() or shutil.which(p))]
    assert not missing, f"install Debian's chromium and chromium-driver (.ci/run does): missing {missing}"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK})
    driver.set_page_load_timeout(60)
    return driver


def hook_state(driver: Any) -> tuple[int, list[str]]:
    """``(window.__xss, window.__csp)`` of the current page."""
    xss, csp = driver.execute_script("return [window.__xss, window.__csp];")
    return int(xss), list(csp)


def shoot(driver: Any, name: str) -> Path:
    """Save a screenshot of the current page as a test artefact."""
    path = artefacts_dir() / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def click_and_wait(element: Any, *, confirm: bool = False) -> None:
    """Click ``element`` (accepting a confirm dialog when asked) and wait for the next page to load."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver = element.parent
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    if confirm:
        WebDriverWait(driver, 20).until(expected_conditions.alert_is_present()).accept()
    wait_until_replaced(driver, old)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def back_and_wait(driver: Any) -> None:
    """Go back one page and wait until the previous document has replaced the current one."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")
    driver.back()
    wait_until_replaced(driver, old)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def wait_until_replaced(driver: Any, old: Any) -> None:
    """Wait until the document holding ``old`` (an element of it) has been replaced."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda _driver: _replaced(old))


_GONE_FROM_THE_DOCUMENT = ("does not belong to the document", "No node with given id")
"""How Chromium answers a question about a node of a document that was just replaced, when it does not
answer "stale element" (a race inside the driver: the node id is resolved against the new document)."""


def _replaced(element: Any) -> bool:
    """Whether ``element``'s document has been replaced: ``staleness_of``, also counting the answer
    Chromium gives when the question races the new document (:data:`_GONE_FROM_THE_DOCUMENT`)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if any(sign in (exc.msg or "") for sign in _GONE_FROM_THE_DOCUMENT):
            return True
        raise
    return False
