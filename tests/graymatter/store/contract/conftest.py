"""The store contract suite runs against every backend listed in ``BACKENDS``.

Adding a backend is a one-line change: add its name to ``BACKENDS`` and a branch in ``_open`` that returns
a fresh, empty store implementing :class:`graymatter.store.base.Store` (and closes nothing itself; the
fixture closes it). A backend that cannot run here should call ``pytest.skip`` in its branch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graymatter.store.base import Store

BACKENDS = ["sqlite", "postgres"]


def _open(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    if backend == "sqlite":
        from graymatter.store.sqlite import SQLiteStore

        return SQLiteStore(tmp_path / f"store-{len(list(tmp_path.iterdir()))}")
    if backend == "postgres":
        from graymatter.store.postgres import PostgresStore
        from support.pgserver import start_cluster

        return PostgresStore(start_cluster().create_database())
    raise AssertionError(f"unknown backend {backend}")


@pytest.fixture(params=BACKENDS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """A factory of fresh, empty stores of one backend; every store it made is closed afterwards."""
    made: list[Store] = []

    def factory() -> Store:
        store = _open(request.param, tmp_path, request)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()
