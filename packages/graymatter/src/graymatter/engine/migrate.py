"""Copy a whole store to another backend (SQLite -> PostgreSQL and back), then verify it.

The target must be empty (nothing already stored there is changed). Facts (live, tombstoned and aliases,
with their ids, timestamps, weights, pins, confidence and provenance), checkpoints, links and scoped
tokens are copied in batches; the copy is then verified by counting every record kind on both sides and
comparing SHA-256 checksums over the canonical JSON of every record, sorted by id. Vectors are not
copied: the target re-embeds pending facts the first time it is opened with an embedder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from graymatter.errors import InvalidInput
from graymatter.models import Checkpoint, Fact, Link
from graymatter.store import Store, open_store
from graymatter.store.tokens import TokenStore

BATCH = 2000


class KindReport(BaseModel):
    """Counts and checksums of one record kind on both sides."""

    kind: str
    source_count: int
    target_count: int
    source_sha256: str
    target_sha256: str

    @property
    def ok(self) -> bool:
        return self.source_count == self.target_count and self.source_sha256 == self.target_sha256


class MigrationReport(BaseModel):
    """What ``graymatter migrate`` copied and whether verification passed."""

    source: str
    target: str
    kinds: list[KindReport]
    verified: bool


def _digest(lines: Iterable[str]) -> tuple[int, str]:
    h = hashlib.sha256()
    count = 0
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
        count += 1
    return count, h.hexdigest()


def _facts(store: Store) -> list[Fact]:
    return store.list_facts(None, include_superseded=True, kinds=("fact", "alias"))


def _canonical(records: Sequence[BaseModel]) -> Iterator[str]:
    for record in sorted(records, key=lambda r: r.id):  # type: ignore[attr-defined]
        yield record.model_dump_json()


def _token_lines(tokens: TokenStore) -> Iterator[str]:
    for record in sorted(tokens.list(), key=lambda r: r.id):
        found = tokens.lookup(record.id)
        yield record.model_dump_json() + "|" + (found[1] if found else "")


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _is_empty(store: Store, tokens: TokenStore) -> bool:
    return not store.agents() and not tokens.list()


def migrate(
    source_url: str, target_url: str, *, batch: int = BATCH, progress: Callable[[str], None] | None = None
) -> MigrationReport:
    """Copy everything from ``source_url`` to the empty store at ``target_url`` and verify the copy."""
    if source_url == target_url:
        raise InvalidInput("--from and --to are the same store")
    say = progress or (lambda _message: None)
    source = open_store(source_url)
    try:
        target = open_store(target_url)
        try:
            source_tokens, target_tokens = source.token_store(), target.token_store()
            if not _is_empty(target, target_tokens):
                raise InvalidInput(
                    f"the target store {target.url} is not empty; migrate only into a new, empty store "
                    "(nothing was changed)"
                )
            facts = _facts(source)
            say(f"copying {len(facts)} facts")
            for chunk in _batches(facts, batch):
                target.import_facts(chunk)
            checkpoints: list[Checkpoint] = source.list_checkpoints(None)
            say(f"copying {len(checkpoints)} checkpoints")
            for chunk in _batches(list(reversed(checkpoints)), batch):
                target.import_checkpoints(chunk)
            links: list[Link] = source.links(None)
            say(f"copying {len(links)} links")
            for chunk in _batches(links, batch):
                target.import_links(chunk)
            token_records = source_tokens.list()
            say(f"copying {len(token_records)} tokens")
            for record in token_records:
                found = source_tokens.lookup(record.id)
                if found is not None:
                    target_tokens.insert(*found)  # as stored: a revoked token stays revoked, at its time
            say("verifying counts and checksums")
            kinds = [
                _compare("facts", _canonical(facts), _canonical(_facts(target))),
                _compare("checkpoints", _canonical(checkpoints), _canonical(target.list_checkpoints(None))),
                _compare("links", _canonical(links), _canonical(target.links(None))),
                _compare("tokens", _token_lines(source_tokens), _token_lines(target_tokens)),
            ]
            return MigrationReport(
                source=source.url, target=target.url, kinds=kinds, verified=all(k.ok for k in kinds)
            )
        finally:
            target.close()
    finally:
        source.close()


def _compare(kind: str, source_lines: Iterable[str], target_lines: Iterable[str]) -> KindReport:
    source_count, source_sha = _digest(source_lines)
    target_count, target_sha = _digest(target_lines)
    return KindReport(
        kind=kind,
        source_count=source_count,
        target_count=target_count,
        source_sha256=source_sha,
        target_sha256=target_sha,
    )
