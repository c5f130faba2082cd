"""The dashboard in a real headless Chromium against a real `graymatter serve` on a seeded SQLite store."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait
from tests.graymatter.faces.dashboard.browser import (
    back_and_wait,
    click_and_wait,
    hook_state,
    shoot,
    wait_until_replaced,
)
from tests.graymatter.faces.dashboard.conftest import HOSTILE, HOSTILE_AGENT, Seeded, login

from support.processes import ServerProcess


def _text(driver: Any) -> str:
    return str(driver.find_element(By.TAG_NAME, "main").text)


def _clean(driver: Any) -> None:
    assert hook_state(driver) == (0, []), "a script ran or the CSP blocked something on " + driver.current_url


def _open_fact(driver: Any, text: str) -> None:
    """From the agent's facts, open the fact whose whole text is ``text``."""
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "nav.sub a"))
    anchors = driver.find_elements(By.CSS_SELECTOR, "main tbody td:first-child a")
    click_and_wait(next(a for a in anchors if a.text == text))


def test_login_overview_and_logout(browser: Any, server: ServerProcess) -> None:
    browser.get(server.url + "/")
    assert browser.current_url.endswith("/ui/login")
    login(browser, server)
    assert browser.current_url == server.url + "/ui/"
    assert browser.find_element(By.TAG_NAME, "h1").text == "Agents"
    rows = browser.find_elements(By.CSS_SELECTOR, "main tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == sorted(["alpha", "beta", HOSTILE_AGENT])
    alpha = next(r for r in rows if r.text.startswith("alpha"))
    cells = [c.text for c in alpha.find_elements(By.TAG_NAME, "td")]
    assert cells[1:5] == [
        "11",
        "1",
        "0",
        "2",
    ]  # live facts (11 remembered, 1 revised), superseded, pinned, ckpts
    assert (
        alpha.find_element(By.CSS_SELECTOR, "svg.spark title")
        .get_attribute("textContent")
        .endswith("facts in the last 30 days")
    )
    cookie = browser.get_cookie("gm_session")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    _clean(browser)
    shoot(browser, "agents")
    click_and_wait(browser.find_element(By.CSS_SELECTOR, ".who button"))
    assert "Signed out." in _text(browser)
    browser.get(server.url + "/ui/")
    assert browser.current_url.endswith("/ui/login")


def test_facts_filters_fact_page_and_hostile_texts(
    browser: Any, server: ServerProcess, seeded: Seeded
) -> None:
    login(browser, server)
    click_and_wait(browser.find_element(By.LINK_TEXT, "alpha"))
    shown = _text(browser)
    for text in HOSTILE:
        assert text[:60] in shown, text  # shown as text, never run
    assert "The cache is Redis in production" not in shown  # live by default
    _clean(browser)
    shoot(browser, "facts")
    browser.find_element(By.NAME, "state").send_keys("superseded")
    click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.filters button"))
    rows = browser.find_elements(By.CSS_SELECTOR, "main tbody tr")
    assert len(rows) == 1 and "The cache is Redis in production" in rows[0].text
    assert "superseded" in rows[0].text  # the state in words, not colour alone
    click_and_wait(rows[0].find_element(By.TAG_NAME, "a"))
    chain = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "main table:nth-of-type(2) tbody tr")]
    tables = browser.find_elements(By.CSS_SELECTOR, "main table")
    chain = [
        r.find_element(By.TAG_NAME, "td").text for r in tables[1].find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert chain == ["The cache is Redis in production", "The cache is Valkey in production"]
    assert "Superseded facts cannot be changed." in _text(browser)
    for text in HOSTILE:
        _open_fact(browser, text)
        assert browser.find_element(By.CSS_SELECTOR, "blockquote.fact-text").text == text
        _clean(browser)
    shoot(browser, "fact")


def test_hostile_agent_id_pages(browser: Any, server: ServerProcess) -> None:
    login(browser, server)
    click_and_wait(browser.find_element(By.LINK_TEXT, HOSTILE_AGENT))
    assert browser.find_element(By.TAG_NAME, "h1").text == f"Facts of {HOSTILE_AGENT}"
    for section in ("Search", "Checkpoints", "Graph", "Facts"):
        click_and_wait(browser.find_element(By.LINK_TEXT, section))
        assert HOSTILE_AGENT in browser.find_element(By.TAG_NAME, "h1").text
        _clean(browser)


def test_search_shows_per_signal_ranks_and_scores(browser: Any, server: ServerProcess) -> None:
    login(browser, server)
    browser.get(server.url + "/ui/search?agent=alpha")
    browser.find_element(By.ID, "q").send_keys("who owns billing")
    click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.search button"))
    rows = browser.find_elements(By.CSS_SELECTOR, "main tbody tr")
    first = [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")]
    assert first[0] == "Alice owns the billing service"
    assert first[1] == "#1"  # keyword rank
    assert first[2] == "—"  # no vector signal on a keyword-only store
    assert first[3] == "—"  # recency only orders equally strong matches: it casts no vote of its own
    assert float(first[4]) > 0 and float(first[5]) > 0
    titles = [t.get_attribute("textContent") for t in rows[0].find_elements(By.CSS_SELECTOR, "svg title")]
    assert titles == ["keyword: rank 1", "vector: not ranked", "recency: not ranked"]
    _clean(browser)
    shoot(browser, "search")


def test_every_write_action(browser: Any, server: ServerProcess) -> None:
    login(browser, server)
    browser.get(server.url + "/ui/facts?agent=alpha")
    _open_fact(browser, "Alice owns the billing service")
    browser.find_element(By.CSS_SELECTOR, "form.action button[type=submit]")  # write controls shown
    _submit(browser, "pin")
    assert (
        "Pinned." in _text(browser) and "pinned" in browser.find_element(By.CSS_SELECTOR, "main table").text
    )
    _submit(browser, "unpin")
    assert "Unpinned." in _text(browser)
    _submit(browser, "alias", term="owner", equivalents="maintainer, lead")
    assert "Alias recorded." in _text(browser)
    _submit(browser, "link", source="Alice", relation="mentors", target="Bob")
    assert "Link recorded." in _text(browser) and "mentors" in _text(browser)
    textarea = browser.find_element(By.NAME, "new_text")
    textarea.clear()
    textarea.send_keys("Alice and Bob own the billing service")
    _submit(browser, "revise")
    assert "Revised" in _text(browser)
    assert browser.find_element(By.CSS_SELECTOR, "blockquote").text == "Alice and Bob own the billing service"
    details = {
        r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
        for r in browser.find_elements(By.CSS_SELECTOR, "main table:first-of-type tbody tr")
    }
    assert (details["interface"], details["client"], details["token"]) == (
        "rest",
        "graymatter-dashboard",
        "default",
    )
    _submit(browser, "forget", confirm=True)
    assert "Forgotten" in _text(browser) and "Superseded facts cannot be changed." in _text(browser)
    _clean(browser)
    _get_graph(browser, server.url + "/ui/graph?agent=alpha")
    labels = [
        t.get_attribute("textContent") for t in browser.find_elements(By.CSS_SELECTOR, "svg.graph .node text")
    ]
    assert {"alice", "bob", "billing service", "valkey"} <= set(labels)
    shoot(browser, "graph")


def _get_graph(driver: Any, url: str) -> None:
    """Open the graph page and wait until it shows its graph. Under load, the navigation that follows a
    confirmed form (POST, then its redirect) can still be in flight and replace the page asked for."""

    def shown(d: Any) -> bool:
        if d.current_url != url:
            d.get(url)
        return bool(d.find_elements(By.CSS_SELECTOR, "svg.graph"))

    driver.get(url)
    WebDriverWait(driver, 30).until(shown, message=f"no graph on {driver.current_url}: {_text(driver)[:200]}")


def _submit(driver: Any, action: str, *, confirm: bool = False, **fields: str) -> None:
    form = driver.find_element(By.XPATH, f"//form[input[@name='action' and @value='{action}']]")
    for name, value in fields.items():
        form.find_element(By.NAME, name).send_keys(value)
    click_and_wait(form.find_element(By.CSS_SELECTOR, "button[type=submit]"), confirm=confirm)


def test_checkpoint_tree_and_diff(browser: Any, server: ServerProcess) -> None:
    login(browser, server)
    browser.get(server.url + "/ui/checkpoints?agent=alpha")
    assert len(browser.find_elements(By.CSS_SELECTOR, "main tbody tr")) == 2
    click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.diff button"))
    rows = [
        [c.text for c in r.find_elements(By.TAG_NAME, "td")]
        for r in browser.find_elements(By.CSS_SELECTOR, "main tbody tr")
    ]
    assert rows == [
        ["+ added", "done", "", "true"],
        ["− removed", "files[1]", '"b.py"', ""],
        ["~ changed", "plan.next", '"tests"', '"ship"'],
        ["~ changed", "step", "1", "2"],
    ]
    shoot(browser, "diff")
    back_and_wait(browser)
    click_and_wait(browser.find_element(By.CSS_SELECTOR, "main tbody tr a"))
    summary = browser.find_element(By.XPATH, "//summary[span[text()='plan']]")
    leaf = browser.find_element(By.XPATH, "//li[span[text()='next']]")
    assert leaf.is_displayed()
    summary.send_keys(Keys.ENTER)  # collapsible from the keyboard
    assert not leaf.is_displayed()
    _clean(browser)
    shoot(browser, "checkpoint")


def test_read_only_token_sees_no_write_controls_and_is_refused(
    browser: Any, server: ServerProcess, seeded: Seeded
) -> None:
    login(browser, server, seeded.read_only)
    rows = browser.find_elements(By.CSS_SELECTOR, "main tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["alpha"]
    assert "read · alpha" in browser.find_element(By.CSS_SELECTOR, ".who").text
    click_and_wait(browser.find_element(By.LINK_TEXT, "alpha"))
    _open_fact(browser, "The deploy runs on Fridays after the tests pass")
    assert browser.find_elements(By.CSS_SELECTOR, "form.action") == []
    assert browser.find_elements(By.LINK_TEXT, "Tokens") == []
    # A forged form (the page offers none) is refused server-side: post one from the page itself.
    _forge(browser, "pin", "alpha", "The deploy runs on Fridays after the tests pass")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Refused"
    assert "read-only" in _text(browser)
    browser.get(server.url + "/ui/facts?agent=beta")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Refused"
    browser.get(server.url + "/ui/tokens")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Refused"


def test_out_of_scope_token_is_refused(browser: Any, server: ServerProcess, seeded: Seeded) -> None:
    login(browser, server, seeded.other_agent)
    rows = browser.find_elements(By.CSS_SELECTOR, "main tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["beta"]
    for page in ("facts", "search", "checkpoints", "graph"):
        browser.get(f"{server.url}/ui/{page}?agent=alpha")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Refused"
        assert "no access to agent namespace 'alpha'" in _text(browser)
    browser.get(server.url + "/ui/facts?agent=beta")
    click_and_wait(browser.find_element(By.PARTIAL_LINK_TEXT, "Beta's secret"))
    _forge(browser, "pin", "alpha", "The deploy runs on Fridays after the tests pass")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Refused"


def _forge(driver: Any, action: str, agent: str, text: str) -> None:
    """Post a hand-made action form from the current page (with its valid CSRF token)."""
    old = driver.find_element(By.TAG_NAME, "html")
    driver.execute_script(_FORGE, action, agent, text)
    wait_until_replaced(driver, old)


_FORGE = """
var csrf = document.querySelector('input[name=csrf]').value;
var form = document.createElement('form'); form.method = 'post'; form.action = '/ui/act';
var fields = {csrf: csrf, action: arguments[0], agent: arguments[1], text: arguments[2], id: 'x'};
for (var k in fields) { var i = document.createElement('input'); i.type = 'hidden'; i.name = k;
  i.value = fields[k]; form.appendChild(i); }
document.body.appendChild(form); form.submit();
"""


def test_token_management(browser: Any, server: ServerProcess) -> None:
    login(browser, server)
    click_and_wait(browser.find_element(By.LINK_TEXT, "Tokens"))
    before = len(browser.find_elements(By.CSS_SELECTOR, "main tbody tr"))
    browser.find_element(By.NAME, "agents").send_keys("gamma")
    browser.find_element(By.NAME, "label").send_keys("<b>made in the browser</b>")
    click_and_wait(browser.find_element(By.CSS_SELECTOR, "button[value=create]"))
    token = browser.find_element(By.CSS_SELECTOR, "input.secret").get_attribute("value")
    assert token.startswith("gm_")
    click_and_wait(browser.find_element(By.LINK_TEXT, "Back to tokens"))
    rows = browser.find_elements(By.CSS_SELECTOR, "main tbody tr")
    assert len(rows) == before + 1
    assert token not in browser.page_source  # shown once, never listed
    row = next(r for r in rows if "<b>made in the browser</b>" in r.text)
    click_and_wait(row.find_element(By.CSS_SELECTOR, "button[value=revoke]"), confirm=True)
    assert "Token revoked." in _text(browser)
    shoot(browser, "tokens")
    browser.delete_all_cookies()
    login(browser, server, token)
    assert "That token is not valid." in _text(browser)


def test_health_keyboard_narrow_and_dark(browser: Any, server: ServerProcess) -> None:
    login(browser, server)
    click_and_wait(browser.find_element(By.LINK_TEXT, "Health"))
    cells = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "main table:first-of-type td")]
    assert cells[:4] == ["store", "sqlite", "status", cells[3]] and cells[3].startswith("ok, round trip")
    assert "Requests (from /metrics)" in _text(browser)
    shoot(browser, "health")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    assert focused.text == "Skip to content"
    assert browser.execute_script("return getComputedStyle(arguments[0]).outlineStyle", focused) == "solid"
    browser.set_window_size(390, 844)
    for page in ("", "facts?agent=alpha", "search?agent=alpha&q=deploy", "checkpoints?agent=alpha"):
        browser.get(f"{server.url}/ui/{page}")
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    shoot(browser, "narrow-search")
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    browser.set_window_size(1280, 900)
    browser.get(server.url + "/ui/facts?agent=alpha")
    background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(13, 17, 23)"
    shoot(browser, "facts-dark")
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
