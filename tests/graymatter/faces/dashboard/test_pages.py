"""Dashboard pages in process (the service's real ASGI app over a real SQLite store): paging and filters."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graymatter.config import MemoryConfig
from graymatter.engine.access import Principal, TokenService, bind_principal
from graymatter.engine.memory import Memory
from graymatter.engine.scoped import ScopedMemory
from graymatter.errors import AccessDenied, InvalidInput
from graymatter.faces.dashboard.pages_facts import PAGE_SIZE, SCAN_CAP, encode_cursor, parse_cursor
from graymatter.faces.http.app import ServiceConfig, build_app

TOKEN = "pages-test-token-0123456789"


def _pages(memory: Memory, *paths: str, status: int = 200, token: str = TOKEN) -> list[str]:
    app = build_app(memory, TokenService(memory.store.token_store(), default_token=TOKEN), ServiceConfig())

    async def fetch() -> list[str]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
            assert (await client.post("/ui/login", data={"token": token})).status_code == 303
            out = []
            for path in paths:
                reply = await client.get(path)
                assert reply.status_code == status, reply.text[:500]
                out.append(reply.text)
            return out

    return asyncio.run(fetch())


def _texts(page: str) -> list[str]:
    return re.findall(r'<td data-label="Text"><a href="/ui/fact\?[^"]+">([^<]+)</a></td>', page)


def _next(page: str) -> str | None:
    found = re.search(r'rel="next" href="([^"]+)"', page)
    return found.group(1).replace("&amp;", "&") if found else None


def test_cursor_paging_lists_every_fact_once_newest_first(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None)
    try:
        total = 2 * PAGE_SIZE + 17
        memory.remember_many("pager", [f"note number {i:04d}" for i in range(total)])
        seen: list[str] = []
        path: str | None = "/ui/facts?agent=pager"
        while path is not None:
            (page,) = _pages(memory, path)
            seen.extend(_texts(page))
            path = _next(page)
        newest_first = [f.text for f in memory.latest_facts("pager", total)]
        assert seen == newest_first and len(set(seen)) == total
    finally:
        memory.close()


def test_a_filtered_listing_scans_in_windows_and_can_look_further_back(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None)
    try:
        memory.remember("f", "an old pinned fact", confidence="verified")
        memory.pin("f", "an old pinned fact")
        memory.remember_many("f", [f"filler {i}" for i in range(SCAN_CAP + 10)])
        memory.remember("f", "a new pinned fact")
        memory.pin("f", "a new pinned fact")
        pinned, verified = _pages(
            memory, "/ui/facts?agent=f&pinned=yes", "/ui/facts?agent=f&confidence=verified"
        )
        assert _texts(pinned) == ["a new pinned fact"]
        assert f"A filtered page looks at {SCAN_CAP:,} facts at a time." in pinned
        assert _texts(verified) == [] and f"None of these {SCAN_CAP:,} facts match the filters." in verified
        further, verified_further = _pages(memory, _next(pinned) or "", _next(verified) or "")
        (bad,) = _pages(memory, "/ui/facts?agent=f&state=bogus", status=400)
        (forged,) = _pages(memory, "/ui/facts?agent=f&before=2026-01-01T00:00:00~x", status=400)
    finally:
        memory.close()
    assert _texts(further) == ["an old pinned fact"] and _next(further) is None
    assert _texts(verified_further) == ["an old pinned fact"]
    assert "state must be one of live, superseded, all" in bad
    assert "before must be a cursor from a &#x27;Next page&#x27; link" in forged


def _walk(memory: Memory, path: str) -> list[str]:
    seen: list[str] = []
    following: str | None = path
    while following is not None:
        (page,) = _pages(memory, following)
        seen.extend(_texts(page))
        following = _next(page)
        assert following is None or following.count("~") == 1  # a keyset cursor: no depth, no offset
    return seen


def test_every_state_pages_by_keyset_each_fact_once(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None)
    try:
        memory.remember_many("k", [f"note {i:03d}" for i in range(2 * PAGE_SIZE + 7)])
        for i in range(0, 2 * PAGE_SIZE + 7, 9):
            memory.revise("k", f"note {i:03d}", f"note {i:03d} revised")
        everything = [f.text for f in memory.latest_facts("k", 1000)]
        gone = [f.text for f in memory.latest_facts("k", 1000) if not f.live]
        live = [f.text for f in memory.latest_facts("k", 1000, include_superseded=False)]
        assert (
            _walk(memory, "/ui/facts?agent=k&state=all") == everything
            and len(everything) == 2 * PAGE_SIZE + 19
        )
        assert _walk(memory, "/ui/facts?agent=k&state=superseded") == gone and len(gone) == 12
        assert _walk(memory, "/ui/facts?agent=k") == live
        deep = memory.latest_facts("k", 2 * PAGE_SIZE + 1, include_superseded=False)[-2]
        cursor = urlencode({"agent": "k", "before": f"{deep.created_at.isoformat()}~{deep.id}"})
        (page,) = _pages(memory, f"/ui/facts?{cursor}")
    finally:
        memory.close()
    assert _texts(page) == live[2 * PAGE_SIZE :]


def test_a_token_scoped_to_one_agent_pages_only_that_agent(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None)
    try:
        memory.remember("mine", "a fact of mine")
        memory.remember("theirs", "a fact of theirs")
        token, _ = TokenService(memory.store.token_store()).create(["mine"], read_only=True)
        (own,) = _pages(memory, "/ui/facts?agent=mine&state=all&pinned=no", token=token)
        (foreign,) = _pages(memory, "/ui/facts?agent=theirs&state=all", token=token, status=403)
    finally:
        memory.close()
    assert _texts(own) == ["a fact of mine"]
    assert "a fact of theirs" not in foreign


OFFSETS = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))


def test_scoped_memory_checks_read_scope_before_paging(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None)
    try:
        memory.remember("mine", "a fact of mine")
        memory.remember("theirs", "a fact of theirs")
        scoped = ScopedMemory(memory)
        reader = Principal(token_id="t1", agents=frozenset({"mine"}), access="read")
        with bind_principal(reader):
            page = scoped.facts_page("mine", 10, live=None, pinned=False)
            with pytest.raises(AccessDenied):
                scoped.facts_page("theirs", 10)
        with pytest.raises(InvalidInput, match=r"^limit must be 1\.\.1000 and scan at least 1$"):
            memory.facts_page("mine", 0)
    finally:
        memory.close()
    assert [f.text for f in page.facts] == ["a fact of mine"] and page.before is None and not page.partial


MOMENTS = st.datetimes(timezones=OFFSETS | st.just(UTC))
"""Fixed offsets (a zone's fold or gap would name another instant; facts' times are UTC anyway)."""
IDS = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="~"), min_size=1, max_size=40)


@given(moment=MOMENTS, fact_id=IDS)
def test_a_cursor_reads_back_as_written(moment: datetime, fact_id: str) -> None:
    assert parse_cursor(encode_cursor((moment, fact_id))) == (moment, fact_id)


@given(raw=st.text(max_size=300))
def test_any_other_before_is_refused_in_one_line_or_read_as_a_cursor(raw: str) -> None:
    try:
        parsed = parse_cursor(raw)
    except InvalidInput as exc:
        assert str(exc) == "before must be a cursor from a 'Next page' link"
        return
    if raw == "":
        assert parsed is None
        return
    assert parsed is not None and parsed[0].utcoffset() is not None and parsed[1] == raw.partition("~")[2]
    assert parse_cursor(encode_cursor(parsed)) == parsed


@pytest.mark.parametrize(
    "raw", ["2026-01-01T00:00:00~x", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00~", "x~y", "~id"]
)
def test_malformed_cursors_are_refused(raw: str) -> None:
    with pytest.raises(InvalidInput):
        parse_cursor(raw)


def test_pages_and_sign_in_attempts_are_rate_limited_per_caller(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None)
    tokens = TokenService(memory.store.token_store(), default_token=TOKEN)
    app = build_app(memory, tokens, ServiceConfig(rate_limit=0.001, rate_burst=3))

    async def run() -> tuple[list[int], list[int], str]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
            signed_in = (
                await client.post("/ui/login", data={"token": TOKEN})
            ).status_code  # address bucket: 1
            pages = [(await client.get("/ui/")).status_code for _ in range(4)]  # the token's bucket
            last = await client.get("/ui/health")
            client.cookies.clear()  # a stranger without a session: its address is the key
            guesses = [
                (await client.post("/ui/login", data={"token": "guess-0123456789abcdef"})).status_code
                for _ in range(3)
            ]
            return [signed_in, *pages, last.status_code], guesses, last.headers.get("retry-after", "")

    try:
        statuses, guesses, retry = asyncio.run(run())
    finally:
        memory.close()
    assert statuses == [303, 200, 200, 200, 429, 429] and int(retry) >= 1
    assert guesses == [401, 401, 429]


def test_no_auth_on_loopback_signs_in_without_a_token_but_still_checks_origin(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None)
    memory.remember("solo", "a fact on a --no-auth server")
    app = build_app(memory, None, ServiceConfig(no_auth=True))

    async def run() -> tuple[str, int, int, str]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
            form = (await client.get("/ui/login")).text
            foreign = await client.post("/ui/login", data={}, headers={"origin": "http://evil.example"})
            signed_in = await client.post("/ui/login", data={})
            overview = await client.get("/ui/")
            return form, foreign.status_code, signed_in.status_code, overview.text

    try:
        form, foreign, signed_in, overview = asyncio.run(run())
    finally:
        memory.close()
    assert 'name="token"' not in form and "Sign in" in form
    assert foreign == 403 and signed_in == 303
    assert ">solo</a>" in overview and "token <code>local</code> · read-write · all agents" in overview
