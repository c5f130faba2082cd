"""`graymatter ui` (a real subprocess on a demo-like store) and `graymatter serve` on PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from tests.graymatter.faces.dashboard.conftest import seed

from support.processes import TOKEN, auth, graymatter_command, server_env, start_process, start_server

UI_ANNOUNCE = re.compile(r"one-time login link \(valid 10 minutes\): (http://\S+)")


def test_ui_prints_a_one_time_login_link_that_opens_a_session(tmp_path: Path) -> None:
    seeded = seed(tmp_path / "store")
    process = start_process(
        graymatter_command(seeded.store, "ui", "--no-open"),
        env=server_env(),
        log=tmp_path / "ui.log",
        announce=UI_ANNOUNCE,
    )
    try:
        link = process.url
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/ui/login\?code=[A-Za-z0-9_-]{43}", link), link
        client = httpx.Client(follow_redirects=False)
        opened = client.get(link)
        assert opened.status_code == 303 and "HttpOnly" in opened.headers["set-cookie"]
        base = link.split("/ui/")[0]
        overview = client.get(base + "/ui/")
        assert overview.status_code == 200 and ">alpha</a>" in overview.text
        assert "token <code>local</code> · read-write · all agents" in overview.text
        again = httpx.get(link, follow_redirects=False)
        assert again.status_code == 401 and "used or has expired" in again.text
        assert httpx.get(base + "/ui/", follow_redirects=False).headers["location"] == "/ui/login"
    finally:
        process.stop()


def test_ui_on_the_demo_store_shows_its_agent(tmp_path: Path) -> None:
    import subprocess

    store = tmp_path / "demo-store"
    demo = subprocess.run(
        graymatter_command(tmp_path / "unused", "demo", "--keep", str(store)),
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stderr
    process = start_process(
        graymatter_command(store, "ui", "--no-open"),
        env=server_env(),
        log=tmp_path / "ui.log",
        announce=UI_ANNOUNCE,
    )
    try:
        client = httpx.Client(follow_redirects=True)
        overview = client.get(process.url)
        assert overview.status_code == 200 and ">support-bot</a>" in overview.text
        facts = client.get(process.url.split("/ui/")[0] + "/ui/facts", params={"agent": "support-bot"})
        assert facts.status_code == 200 and facts.text.count('<td data-label="Text">') >= 5
    finally:
        process.stop()


def test_ui_refuses_a_bad_port_without_creating_anything(tmp_path: Path) -> None:
    import subprocess

    store = tmp_path / "store"
    done = subprocess.run(
        graymatter_command(store, "ui", "--no-open", "--port", "70000"),
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--port must be between 0 and 65535" in done.stderr
    assert not store.exists()


@pytest.mark.postgres
def test_serve_on_postgresql_shows_the_dashboard(pg_dsn: str, tmp_path: Path) -> None:
    server = start_server(pg_dsn, tmp_path / "s")
    try:
        stored = httpx.post(
            server.url + "/remember",
            json={"agent_id": "team", "text": "Deploys on <Fridays>"},
            headers=auth(),
        )
        assert stored.status_code == 201
        client = httpx.Client(base_url=server.url, follow_redirects=False)
        assert client.post("/ui/login", data={"token": TOKEN}).status_code == 303
        facts = client.get("/ui/facts", params={"agent": "team"})
        assert facts.status_code == 200 and "Deploys on &lt;Fridays&gt;" in facts.text
        health = client.get("/ui/health")
        assert re.search(r'<td data-label="State">postgres(ql)?</td>', health.text), health.text[-800:]
    finally:
        server.stop()
