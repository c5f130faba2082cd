"""Fixtures for the dashboard tests: a seeded store, a real `graymatter serve`, scoped tokens, Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.graymatter.faces.dashboard.browser import click_and_wait, start_chromium

from graymatter.config import MemoryConfig
from graymatter.engine.access import TokenService
from graymatter.engine.memory import Memory
from support.processes import TOKEN, ServerProcess, start_server

HOSTILE = [
    "<script>window.__xss=1</script>",
    '"><img src=x onerror="window.__xss=2">',
    "<svg onload=window.__xss=3>",
    "</textarea><script>window.__xss=4</script>",
    "'; window.__xss=5; '",
    '<a href="javascript:window.__xss=6">click</a>',
    "$csrf ${body} {{7*7}} <iframe srcdoc='<script>parent.__xss=7</script>'>",
    "<style>body{display:none}</style><b onmouseover=window.__xss=8>hover</b>",
]
HOSTILE_AGENT = "<img src=x onerror=window.__xss=9>"


@dataclass
class Seeded:
    """The seeded store behind the server and the tokens made for it."""

    store: Path
    read_only: str
    other_agent: str
    fact_texts: list[str]


def seed(store: Path) -> Seeded:
    """Facts (some hostile), a revision, links, aliases and two checkpoints; a read-only and an
    out-of-scope token."""
    memory = Memory(store, config=MemoryConfig(), embedder=None, summariser=None)
    try:
        texts = [
            "The deploy runs on Fridays after the tests pass",
            "Alice owns the billing service",
            "The cache is Redis in production",
            *HOSTILE,
        ]
        for text in texts:
            memory.remember("alpha", text)
        memory.revise("alpha", "The cache is Redis in production", "The cache is Valkey in production")
        memory.link("alpha", "alice", "billing service", "owns")
        memory.link("alpha", "billing service", "valkey", "uses")
        memory.alias("alpha", "cache", ["valkey", "redis"])
        memory.checkpoint_save("alpha", {"step": 1, "files": ["a.py", "b.py"], "plan": {"next": "tests"}})
        memory.checkpoint_save(
            "alpha", {"step": 2, "files": ["a.py"], "plan": {"next": "ship"}, "done": True}
        )
        memory.remember("beta", "Beta's secret plan is quiet")
        memory.remember(HOSTILE_AGENT, "an agent whose id is hostile")
        tokens = TokenService(memory.store.token_store())
        read_only, _ = tokens.create(["alpha"], read_only=True, label="viewer")
        other, _ = tokens.create(["beta"], label="beta writer")
    finally:
        memory.close()
    return Seeded(store, read_only, other, texts)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return seed(tmp_path_factory.mktemp("dash") / "store")


@pytest.fixture(scope="module")
def server(seeded: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_server(str(seeded.store), tmp_path_factory.mktemp("serve"))
    yield process
    process.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    driver = start_chromium()
    yield driver
    driver.quit()


@pytest.fixture
def browser(chromium: Any, server: ServerProcess) -> Any:
    """The module's Chromium, signed out, at the normal desktop width."""
    chromium.get(server.url + "/ui/login")
    chromium.delete_all_cookies()
    chromium.set_window_size(1280, 900)
    return chromium


def login(driver: Any, server: ServerProcess, token: str = TOKEN) -> None:
    """Sign in through the login form, as a person would."""
    from selenium.webdriver.common.by import By

    driver.get(server.url + "/ui/login")
    driver.find_element(By.ID, "token").send_keys(token)
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.login button"))
