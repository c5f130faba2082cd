"""Backend contract: every Store implementation must pass these (see conftest.py to add a backend)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graymatter.ids import new_ulid
from graymatter.models import Checkpoint, Fact, Link, Provenance
from graymatter.store.base import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def fact(agent: str, text: str, minutes: int = 0, **kw: Any) -> Fact:
    at = T0 + timedelta(minutes=minutes)
    return Fact(id=new_ulid(), agent_id=agent, text=text, created_at=at, accessed_at=at, **kw)


StoreFactory = Callable[[], Store]


def test_add_get_roundtrip_preserves_every_field(store_factory: StoreFactory) -> None:
    store = store_factory()
    original = fact(
        "a",
        "Ünïcode text — with \"quotes\" and 'apostrophes'",
        5,
        confidence="verified",
        provenance=Provenance(interface="mcp", client="opencode", token_id="tok1"),
        weight=0.75,
    )
    store.add_facts([original])
    assert store.get_facts([original.id]) == [original]
    assert store.get_facts(["missing", original.id]) == [original]


def test_get_facts_keeps_requested_order(store_factory: StoreFactory) -> None:
    store = store_factory()
    facts = [fact("a", f"fact {i}", i) for i in range(5)]
    store.add_facts(facts)
    wanted = [facts[3].id, facts[0].id, facts[4].id]
    assert [f.id for f in store.get_facts(wanted)] == wanted


def test_find_by_text_is_exact_and_namespaced(store_factory: StoreFactory) -> None:
    store = store_factory()
    a1, a2 = fact("a", "same text", 1), fact("a", "same text", 2)
    store.add_facts([a1, a2, fact("b", "same text", 3), fact("a", "same text ", 4)])
    assert [f.id for f in store.find_by_text("a", "same text")] == [a1.id, a2.id]


def test_supersede_excludes_from_search_and_never_resurrects(store_factory: StoreFactory) -> None:
    store = store_factory()
    old, new = fact("a", "the port is 8080", 1), fact("a", "the port is 9090", 2)
    store.add_facts([old])
    store.add_facts([new])
    assert store.supersede([old.id], new.id) == [old.id]
    assert store.supersede([old.id], "other") == []  # already tombstoned: unchanged
    assert store.get_facts([old.id])[0].superseded_by == new.id
    hits = [h.fact_id for h in store.keyword_search(["a"], ["port"], 10)]
    assert hits == [new.id]
    assert store.recent(["a"], 10) == [new.id]
    assert store.supersedes([new.id]) == {new.id: [old.id]}
    assert store.set_pinned([old.id], True, T0) == []
    store.record_access([old.id], T0 + timedelta(days=1))
    assert store.get_facts([old.id])[0].access_count == 0


def test_keyword_search_stems_ranks_and_filters(store_factory: StoreFactory) -> None:
    store = store_factory()
    running = fact("a", "The runner keeps running every morning", 1, confidence="verified")
    ran = fact("a", "Deployment runs nightly", 2, confidence="unverified")
    other = fact("b", "running in another namespace", 3)
    store.add_facts([running, ran, other, fact("a", "unrelated words entirely", 4)])
    ids = [h.fact_id for h in store.keyword_search(["a"], ["running"], 10)]
    assert set(ids) == {running.id, ran.id}  # porter: running/runs -> run
    assert [h.fact_id for h in store.keyword_search(["a", "b"], ["running"], 10)].count(other.id) == 1
    assert [h.fact_id for h in store.keyword_search(["a"], ["running"], 10, ["verified"])] == [running.id]
    assert store.keyword_search(["a"], ["running"], 10, []) == []
    assert store.keyword_search(["a"], [], 10) == []
    scores = [h.score for h in store.keyword_search(["a"], ["running"], 10)]
    assert scores == sorted(scores, reverse=True)


def test_keyword_search_is_deterministic_on_ties(store_factory: StoreFactory) -> None:
    store = store_factory()
    twins = [fact("a", f"identical {i} alpha", 10 - i) for i in range(6)]
    store.add_facts(twins)
    first = [h.fact_id for h in store.keyword_search(["a"], ["alpha"], 10)]
    assert first == [h.fact_id for h in store.keyword_search(["a"], ["alpha"], 10)]
    by_age = [f.id for f in sorted(twins, key=lambda f: (f.created_at, f.id))]
    assert first == by_age  # equal BM25: oldest first, then id


def test_keyword_search_never_raises_on_fts_syntax(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.add_facts([fact("a", 'quote " and star * and NEAR AND OR NOT', 1)])
    for terms in (['"'], ["*"], ["NEAR"], ["AND", "OR", "NOT"], ["a:b"], ["(x"], ["^"], ["-"]):
        store.keyword_search(["a"], terms, 5)


def test_document_frequencies_counts_live_stemmed_documents(store_factory: StoreFactory) -> None:
    store = store_factory()
    facts = [fact("a", "deploy runs", 1), fact("a", "running deploys", 2), fact("a", "cats", 3)]
    store.add_facts(facts)
    df = store.document_frequencies(["deploying", "run", "cats", "zebra"])
    assert df == {"deploying": 2, "run": 2, "cats": 1, "zebra": 0}
    store.supersede([facts[2].id], "agent")
    assert store.document_frequencies(["cats"]) == {"cats": 0}


def test_recent_orders_newest_first_and_respects_limit(store_factory: StoreFactory) -> None:
    store = store_factory()
    facts = [fact("a", f"t{i}", i) for i in range(5)] + [fact("b", "other", 99)]
    store.add_facts(facts)
    assert store.recent(["a"], 3) == [facts[4].id, facts[3].id, facts[2].id]
    assert store.recent(["a", "b"], 2) == [facts[5].id, facts[4].id]


def test_aliases_are_never_search_candidates(store_factory: StoreFactory) -> None:
    store = store_factory()
    alias = fact("a", "db", 1, kind="alias", equivalents=["database"])
    store.add_facts([alias, fact("a", "the database is postgres", 2)])
    assert alias.id not in [h.fact_id for h in store.keyword_search(["a"], ["db", "database"], 10)]
    assert alias.id not in store.recent(["a"], 10)
    assert store.aliases(["a"]) == [alias]
    assert store.list_facts("a") != store.list_facts("a", kinds=("fact", "alias"))


def test_vectors_search_cosine_and_model_pinning(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.reset_embeddings("m/3")
    near, far = fact("a", "near", 1), fact("a", "far", 2)
    store.add_facts([near, far], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "m/3")
    hits = store.vector_search(["a"], [0.9, 0.1, 0.0], "m/3", 5)
    assert [h.fact_id for h in hits] == [near.id, far.id]
    assert hits[0].score == pytest.approx(0.9 / (0.82**0.5), rel=1e-5)
    assert store.vector_search(["a"], [1, 0, 0], "other/3", 5) == []
    unembedded = fact("a", "pending one", 3)
    store.add_facts([unembedded], [None], "m/3")
    assert store.pending_embedding_count() == 1
    assert [f.id for f in store.pending_embeddings(10)] == [unembedded.id]
    assert store.set_vectors([(unembedded.id, [0.0, 0.0, 1.0])], "m/3") == 1
    assert store.pending_embedding_count() == 0
    assert store.vector_search(["a"], [0, 0, 1], "m/3", 1)[0].fact_id == unembedded.id
    store.supersede([near.id], "agent")
    assert near.id not in [h.fact_id for h in store.vector_search(["a"], [1, 0, 0], "m/3", 5)]


def test_reset_embeddings_marks_every_live_fact_pending(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.reset_embeddings("m/2")
    facts = [fact("a", "one", 1), fact("a", "two", 2)]
    store.add_facts(facts, [[1.0, 0.0], [0.0, 1.0]], "m/2")
    assert store.embedding_model() == "m/2"
    assert store.reset_embeddings("n/4") == 2
    assert store.embedding_model() == "n/4"
    assert store.vector_search(["a"], [1, 0], "m/2", 5) == []
    assert store.pending_embedding_count() == 2


def test_pin_record_access_weights_and_prune(store_factory: StoreFactory) -> None:
    store = store_factory()
    keep, drop = fact("a", "keep me", 1), fact("a", "drop me", 2)
    store.add_facts([keep, drop])
    assert store.set_pinned([keep.id], True, T0) == [keep.id]
    assert store.set_pinned([keep.id], True, T0) == []
    later = T0 + timedelta(days=3)
    store.record_access([keep.id, drop.id], later)
    got = {f.id: f for f in store.get_facts([keep.id, drop.id])}
    assert got[keep.id].access_count == 1 and got[keep.id].accessed_at == later
    assert store.update_weights({drop.id: 0.005, keep.id: 0.004}) == 2
    assert store.update_weights({drop.id: 0.5}) == 0  # weights never rise
    assert store.delete_facts([keep.id, drop.id]) == [drop.id]  # pinned facts are never deleted
    assert store.get_facts([drop.id]) == []


def test_record_accesses_adds_each_count_to_live_facts_only(store_factory: StoreFactory) -> None:
    store = store_factory()
    often, once, gone = fact("a", "often", 1), fact("a", "once", 2), fact("a", "gone", 3)
    store.add_facts([often, once, gone])
    store.supersede([gone.id], often.id)
    later = T0 + timedelta(days=2)
    store.record_accesses({often.id: 4, once.id: 1, gone.id: 2, "unknown": 3}, later)
    store.record_accesses({}, later)
    got = {f.id: f for f in store.get_facts([often.id, once.id, gone.id])}
    assert [got[i].access_count for i in (often.id, once.id, gone.id)] == [4, 1, 0]
    assert got[often.id].accessed_at == later and got[once.id].accessed_at == later


def test_checkpoints_latest_list_and_never_overwritten(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.latest_checkpoint("a") is None
    cps = [
        Checkpoint(
            id=new_ulid(),
            agent_id="a",
            created_at=T0 + timedelta(seconds=i),
            state={"i": i},
            messages=[{"role": "user", "content": "x"}] if i else None,
            message_count=1 if i else 0,
            metadata={"source": "test"},
        )
        for i in range(3)
    ]
    for cp in cps:
        store.save_checkpoint(cp)
    with pytest.raises(Exception):  # noqa: B017 - backends raise their own storage error on a duplicate id
        store.save_checkpoint(cps[0])
    assert store.latest_checkpoint("a") == cps[2]
    assert store.get_checkpoint(cps[0].id) == cps[0]
    assert store.get_checkpoint("nope") is None
    assert store.list_checkpoints("a") == list(reversed(cps))
    assert store.list_checkpoints("a", 1) == [cps[2]]
    assert store.import_checkpoints(cps) == (0, 3)


def test_latest_checkpoint_json_is_the_stored_text_of_the_newest_state(store_factory: StoreFactory) -> None:
    import json

    store = store_factory()
    assert store.latest_checkpoint_json("a") is None
    state = {"turns": [{"text": 'ü 漢字 "q"\n', "n": 1.5e300}], "nested": {"empty": {}}}
    older = Checkpoint(id=new_ulid(), agent_id="a", created_at=T0, state={"old": True})
    newest = Checkpoint(id=new_ulid(), agent_id="a", created_at=T0 + timedelta(seconds=1), state=state)
    newest = newest.model_copy(update={"message_count": 3})
    for cp in (older, newest):
        store.save_checkpoint(cp)
    found = store.latest_checkpoint_json("a")
    assert found is not None
    assert (found.id, found.agent_id, found.created_at, found.message_count) == (
        newest.id,
        "a",
        newest.created_at,
        3,
    )
    assert json.loads(found.state_json) == state
    assert "\n" not in found.state_json and ", " not in found.state_json  # compact, one line


@pytest.mark.parametrize("damaged", ['{"a": [1, 2}', "[1, 2]", '"text"', ""])
def test_latest_checkpoint_json_refuses_a_damaged_state(store_factory: StoreFactory, damaged: str) -> None:
    from graymatter.errors import CorruptRecord

    store: Any = store_factory()
    cp = Checkpoint(id=new_ulid(), agent_id="a", created_at=T0, state={"ok": 1})
    store.save_checkpoint(cp)
    d = store._dialect
    update = f"UPDATE {d.table('checkpoints')} SET state = {d.mark} WHERE id = {d.mark}"
    store._write(lambda c: c.execute(update, (damaged, cp.id)))
    with pytest.raises(CorruptRecord, match=f"checkpoint {cp.id} of agent 'a' cannot be decoded"):
        store.latest_checkpoint_json("a")


def test_links_are_idempotent(store_factory: StoreFactory) -> None:
    store = store_factory()
    link = Link(id=new_ulid(), agent_id="a", source="alice", target="billing", created_at=T0)
    assert store.add_link(link) == link
    again = store.add_link(link.model_copy(update={"id": new_ulid()}))
    assert again.id == link.id
    assert store.links(["a"]) == [link]
    assert store.links(["b"]) == []
    assert store.import_links([link]) == (0, 1)


def test_agents_stats_and_counters(store_factory: StoreFactory) -> None:
    store = store_factory()
    f1, f2 = fact("a", "x one", 1), fact("a", "x two", 2)
    store.add_facts([f1, f2, fact("a", "al", 3, kind="alias", equivalents=["b"])])
    store.supersede([f1.id], f2.id)
    store.save_checkpoint(Checkpoint(id=new_ulid(), agent_id="c", created_at=T0))
    assert store.agents() == ["a", "c"]
    stats = store.stats("a")
    assert (stats.fact_count, stats.superseded_count, stats.alias_count) == (1, 1, 1)
    assert stats.oldest_at == f2.created_at and stats.avg_weight == 1.0
    assert store.bump_write_counter("a") == 1
    assert store.bump_write_counter("a", 4) == 5
    store.reset_write_counter("a")
    assert store.bump_write_counter("a") == 1


def test_import_facts_skips_known_ids(store_factory: StoreFactory) -> None:
    store = store_factory()
    f1 = fact("a", "imported", 1)
    assert store.import_facts([f1]) == (1, 0)
    assert store.import_facts([f1, fact("a", "new", 2)]) == (1, 1)
    assert len(store.list_facts("a")) == 2


def test_neighbours_are_adjacent_live_facts_of_the_same_agent_and_session(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    chat = Provenance(session='chat "1"')
    facts = [fact("a", f"turn {i}", i, provenance=chat) for i in range(7)]
    others = [
        fact("b", "other agent", 3, provenance=chat),
        fact("a", "alias", 3, kind="alias", equivalents=["x"], provenance=chat),
        fact("a", "no session", 3),
        fact("a", "other session", 5, provenance=Provenance(session="chat 2")),
    ]
    store.add_facts([*facts, *others])
    store.supersede([facts[4].id], "agent")
    got = store.neighbours([facts[3].id, facts[0].id, facts[4].id, others[2].id, others[3].id, "unknown"], 2)
    assert got == {
        facts[3].id: [facts[1].id, facts[2].id, facts[5].id, facts[6].id],
        facts[0].id: [facts[1].id, facts[2].id],
        others[3].id: [],
    }
    assert store.neighbours([facts[6].id], 1) == {facts[6].id: [facts[5].id]}
    assert store.neighbours([facts[3].id], 0) == {}


def test_terms_with_spaces_are_phrases(store_factory: StoreFactory) -> None:
    store = store_factory()
    adjacent = fact("a", "the blue whale swims", 1)
    apart = fact("a", "a whale that is blue", 2)
    store.add_facts([adjacent, apart])
    assert [h.fact_id for h in store.keyword_search(["a"], ["blue whale"], 10)] == [adjacent.id]
    assert {h.fact_id for h in store.keyword_search(["a"], ["blue", "whale"], 10)} == {adjacent.id, apart.id}


def test_keyword_search_is_exact_when_other_namespaces_dominate(store_factory: StoreFactory) -> None:
    store = store_factory()
    crowd = [fact("b", "zebra zebra zebra", i) for i in range(150)]  # better BM25 than a's facts
    mine = [fact("a", f"zebra in a long sentence about many other things {i}", 200 + i) for i in range(12)]
    store.add_facts(crowd + mine)
    got = [h.fact_id for h in store.keyword_search(["a"], ["zebra"], 10)]
    assert got == [f.id for f in mine[:10]]  # equal scores: oldest first


def test_keyword_search_orders_ties_oldest_first(store_factory: StoreFactory) -> None:
    store = store_factory()
    twins = [fact("a", f"okapi {i:03d}", 1000 - i) for i in range(120)]  # inserted newest first
    store.add_facts(twins)
    oldest_first = [f.id for f in sorted(twins, key=lambda f: (f.created_at, f.id))]
    everything = store.keyword_search(["a"], ["okapi"], 200)  # room for every match: exact order
    assert [h.fact_id for h in everything] == oldest_first
    cut = [h.fact_id for h in store.keyword_search(["a"], ["okapi"], 10)]
    assert len(cut) == 10 and set(cut) <= set(oldest_first)
    assert cut == sorted(cut, key=oldest_first.index)  # tied facts keep oldest-first order in the list
    assert cut == [h.fact_id for h in store.keyword_search(["a"], ["okapi"], 10)]  # deterministic


def test_keyword_search_never_drops_a_better_match(store_factory: StoreFactory) -> None:
    store = store_factory()
    filler = [fact("a", f"okapi {i:03d} plain words here", i) for i in range(150)]
    best = fact("a", "okapi okapi okapi", 500)  # higher BM25 than every filler fact, inserted last
    store.add_facts([*filler, best])
    assert store.keyword_search(["a"], ["okapi"], 10)[0].fact_id == best.id


def test_rank_info_returns_live_fact_metadata(store_factory: StoreFactory) -> None:
    store = store_factory()
    live, dead = fact("a", "live", 1, confidence="verified"), fact("a", "dead", 2)
    alias = fact("a", "al", 3, kind="alias", equivalents=["x"])
    store.add_facts([live, dead, alias])
    store.supersede([dead.id], "agent")
    assert store.rank_info([live.id, dead.id, alias.id, "missing"]) == {
        live.id: (live.created_at, "verified")
    }
