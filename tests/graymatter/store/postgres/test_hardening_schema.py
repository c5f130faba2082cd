"""Servers opening a fresh PostgreSQL database at the same moment migrate it once (found by the
resilience suite: eight processes starting together failed with 'relation "gm_facts" already exists')."""

from __future__ import annotations

import threading

import pytest

from graymatter.store.postgres import PostgresStore
from support.pgserver import PgCluster

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("trial", range(3))
def test_concurrent_first_opens_all_succeed(pg_cluster: PgCluster, trial: int) -> None:
    dsn = pg_cluster.create_database("schema_race")
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []
    stores: list[PostgresStore] = []

    def open_one() -> None:
        barrier.wait()
        try:
            stores.append(PostgresStore(dsn, min_size=1, max_size=1))
        except BaseException as exc:  # collected: a failure in a thread must fail the test
            failures.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    pg_cluster.drop_database(dsn)
    assert failures == []
    assert len(stores) == 8
