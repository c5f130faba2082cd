"""The dashboard's security contract over HTTP: session cookie, CSRF, cross-site refusals, CSP, escaping."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.graymatter.faces.dashboard.conftest import Seeded, seed

from graymatter.faces.dashboard.html import Markup, esc, render
from graymatter.faces.dashboard.pages_checkpoints import diff_rows
from graymatter.faces.dashboard.sessions import cookie_value
from support.processes import TOKEN, ServerProcess, auth, start_server


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Seeded]]:
    seeded = seed(tmp_path_factory.mktemp("sec") / "store")
    server = start_server(str(seeded.store), tmp_path_factory.mktemp("serve"))
    yield server, seeded
    server.stop()


def _session(server: ServerProcess, token: str = TOKEN) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=server.url, follow_redirects=False)
    reply = client.post("/ui/login", data={"token": token})
    assert reply.status_code == 303, reply.text
    page = client.get("/ui/facts", params={"agent": "alpha"})
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    return client, csrf.group(1)


def test_login_sets_a_strict_httponly_cookie_and_pages_carry_a_strict_csp(
    running: tuple[ServerProcess, Seeded],
) -> None:
    server, _ = running
    reply = httpx.post(server.url + "/ui/login", data={"token": TOKEN})
    cookie = reply.headers["set-cookie"]
    assert reply.status_code == 303 and reply.headers["location"] == "/ui/"
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    page = httpx.get(server.url + "/ui/", cookies={"gm_session": cookie_value(cookie.split(";")[0]) or ""})
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp and "default-src 'none'" in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert page.status_code == 200 and "<script>" not in page.text and " style=" not in page.text
    assert httpx.post(server.url + "/ui/login", data={"token": "wrong-token-0123456789"}).status_code == 401


def test_rest_and_mcp_paths_are_unchanged(running: tuple[ServerProcess, Seeded]) -> None:
    server, _ = running
    assert httpx.get(server.url + "/facts", params={"agent_id": "alpha"}).status_code == 401
    listed = httpx.get(server.url + "/facts", params={"agent_id": "alpha", "limit": 2}, headers=auth())
    assert listed.status_code == 200 and len(listed.json()["facts"]) == 2
    assert httpx.get(server.url + "/healthz").json()["status"] == "ok"
    root = httpx.get(server.url + "/")
    assert root.status_code == 303 and root.headers["location"] == "/ui/"


def test_writes_need_the_session_csrf_token(running: tuple[ServerProcess, Seeded]) -> None:
    server, _ = running
    client, csrf = _session(server)
    form = {"agent": "alpha", "action": "pin", "id": "x", "text": "Alice owns the billing service"}
    for bad in ({}, {"csrf": ""}, {"csrf": csrf[:-1] + ("A" if csrf[-1] != "A" else "B")}):
        refused = client.post("/ui/act", data={**form, **bad})
        assert refused.status_code == 403 and b"CSRF" in refused.content
    pinned = client.get("/ui/facts", params={"agent": "alpha", "pinned": "yes"})
    assert "No facts match these filters." in pinned.text
    done = client.post("/ui/act", data={**form, "csrf": csrf})
    assert done.status_code == 303 and done.headers["location"].endswith("ok=pinned")


@pytest.mark.parametrize(
    "headers",
    [
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"origin": "http://evil.example"},
        {"origin": "null"},
    ],
)
def test_cross_site_posts_are_refused_even_with_cookie_and_csrf(
    running: tuple[ServerProcess, Seeded], headers: dict[str, str]
) -> None:
    server, _ = running
    client, csrf = _session(server)
    form = {"agent": "alpha", "action": "unpin", "id": "x", "text": "Alice owns", "csrf": csrf}
    assert client.post("/ui/act", data=form, headers=headers).status_code == 403
    assert client.post("/ui/login", data={"token": TOKEN}, headers=headers).status_code == 403


def test_logout_ends_the_session_and_a_revoked_token_ends_its_sessions(
    running: tuple[ServerProcess, Seeded], tmp_path: Path
) -> None:
    server, _ = running
    client, csrf = _session(server)
    minted = client.post("/ui/tokens", data={"csrf": csrf, "do": "create", "agents": "alpha"})
    token = re.search(r'value="(gm_[^"]+)"', minted.text)
    assert minted.status_code == 200 and token is not None
    other, _ = _session(server, token.group(1))
    assert other.get("/ui/").status_code == 200
    token_id = token.group(1).split("_")[1]
    assert client.post("/ui/tokens", data={"csrf": csrf, "do": "revoke", "id": token_id}).status_code == 303
    assert other.get("/ui/").headers["location"] == "/ui/login"
    assert client.post("/ui/logout", data={"csrf": csrf}).status_code == 303
    assert client.get("/ui/").headers["location"] == "/ui/login"


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_rendered_values_never_open_markup(value: str) -> None:
    out = render('<p>$v</p><input value="$v">', v=value)
    inner = out[len("<p>") : out.index("</p>")]
    assert "<" not in inner and ">" not in inner and '"' not in inner and "'" not in inner
    assert esc(Markup("<b>")) == "<b>"


@given(
    st.dictionaries(st.text(min_size=1, max_size=5), st.integers() | st.text(max_size=5), max_size=6),
    st.dictionaries(st.text(min_size=1, max_size=5), st.integers() | st.text(max_size=5), max_size=6),
)
@settings(max_examples=200, deadline=None)
def test_diff_of_flat_states_names_every_changed_key(a: dict[str, object], b: dict[str, object]) -> None:
    rows = {path: change for change, path, _, _ in diff_rows(a, b)}
    simple = all("." not in k and "[" not in k for k in [*a, *b])
    if simple:
        assert set(rows) == {k for k in a.keys() | b.keys() if a.get(k, object()) != b.get(k, object())}
    assert diff_rows(a, a) == []
