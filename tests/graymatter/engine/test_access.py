"""Scoped tokens and the scoped memory view, on the embedded store (no PostgreSQL needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.engine.access import (
    Principal,
    TokenService,
    bind_principal,
    parse_agents,
    split_token,
)
from graymatter.engine.scoped import ScopedMemory
from graymatter.errors import AccessDenied, InvalidToken, NoCheckpoint
from graymatter.store.sqlite.tokens import SQLiteTokenStore


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    with Memory(tmp_path / "store", embedder=None) as opened:
        yield opened


def test_parse_agents() -> None:
    assert parse_agents(" b, a ,a") == ["a", "b"]
    assert parse_agents("*") == ["*"]
    for bad in ("", " , ", "*,a"):
        with pytest.raises(InvalidToken):
            parse_agents(bad)


def test_tokens_authenticate_only_while_active(tmp_path: Path) -> None:
    service = TokenService(SQLiteTokenStore(tmp_path), default_token="default-token-abcdefghij")
    token, record = service.create(["a"], read_only=True, label="reader")
    principal = service.authenticate(token)
    assert principal == Principal(token_id=record.id, agents=frozenset({"a"}), access="read")
    assert service.authenticate("default-token-abcdefghij") == Principal.default()
    token_id, _secret = split_token(token)  # type: ignore[misc]
    wrong = f"gm_{token_id}_{'A' * 43}"
    assert service.authenticate(wrong) is None
    assert service.authenticate(token[:-1]) is None
    assert service.authenticate("") is None and service.authenticate(None) is None
    assert service.revoke(token) is True  # by full token, too
    assert service.authenticate(token) is None
    assert service.revoke(record.id) is False
    with pytest.raises(InvalidToken):
        service.revoke("../../etc")


@given(st.text(max_size=120))
def test_split_token_never_fails_on_any_input(text: str) -> None:
    parts = split_token(text)
    assert parts is None or text == f"gm_{parts[0]}_{parts[1]}"


def test_scoped_memory_checks_every_namespace_before_any_effect(memory: Any) -> None:
    memory.remember("b", "b's fact")
    memory.checkpoint_save("b", {"k": 1})
    scoped = ScopedMemory(memory)
    writer = Principal(token_id="t1", agents=frozenset({"a"}), access="read-write")
    reader = Principal(token_id="t2", agents=frozenset({"a", "__shared__"}), access="read")
    with bind_principal(writer):
        fact = scoped.remember("a", "a's fact")
        assert fact.provenance.token_id == "t1" and fact.provenance.interface == "rest"
        for call in (
            lambda: scoped.remember("b", "x"),
            lambda: scoped.recall("b", "fact"),
            lambda: scoped.recall("a", "fact", scope="all"),
            lambda: scoped.recall_shared("fact"),
            lambda: scoped.remember_shared("x"),
            lambda: scoped.forget("b", "b's fact"),
            lambda: scoped.revise("b", "b's fact", "y"),
            lambda: scoped.checkpoint_latest("b"),
            lambda: scoped.checkpoint_latest_json("b"),
            lambda: scoped.checkpoint_save("b", {}),
            lambda: scoped.export(),
            lambda: scoped.import_bundle({}),
            scoped.compact,
            scoped.reembed_pending,
            lambda: scoped.get(memory.list("b")[0].id),
        ):
            with pytest.raises(AccessDenied):
                call()
        assert scoped.agents() == ["a"]
        with pytest.raises(AttributeError):
            scoped.store  # noqa: B018
    with bind_principal(reader):
        assert [h.text for h in scoped.recall("a", "fact", scope="all")] == ["a's fact"]
        with pytest.raises(AccessDenied, match="read-only"):
            scoped.remember("a", "nope")
        with pytest.raises(NoCheckpoint):
            scoped.checkpoint_latest("a")
    admin = Principal(token_id="t3", agents=frozenset({"*"}), access="read-write")
    with bind_principal(admin):
        assert scoped.compact().bytes_after > 0  # the store's upkeep: every namespace, read-write
    every_reader = Principal(token_id="t4", agents=frozenset({"*"}), access="read")
    with bind_principal(every_reader), pytest.raises(AccessDenied, match="may not compact"):
        scoped.compact()
    assert [f.text for f in memory.list("b")] == ["b's fact"]
    assert memory.checkpoint_latest("b").state == {"k": 1}
    assert len(memory.list("a")) == 1
    # Without a bound principal (CLI, stdio, library) calls pass unchanged.
    assert scoped.remember("b", "local write").provenance.token_id is None
