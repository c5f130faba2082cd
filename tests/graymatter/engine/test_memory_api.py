"""Library API: core signatures, recall semantics, curation (revise/forget/pin/alias/link), checkpoints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.constants import SHARED_AGENT_ID
from graymatter.errors import CorruptRecord, InvalidInput, NoCheckpoint, NotFound, StorageError
from graymatter.ids import is_ulid
from graymatter.models import SignalWeights
from graymatter.retrieval.fusion import rrf_score

CORPUS = [
    "The production database is PostgreSQL 16 in eu-west-1",
    "Deploys happen on Tuesdays after 14:00 UTC",
    "Alice owns the billing service",
    "Bob owns the search service",
    "The API rate limit is 600 requests per minute",
    "Staging is called kestrel",
]


def seed(memory: Memory, agent: str = "agent") -> None:
    for text in CORPUS:
        memory.remember(agent, text)


def test_core_signatures(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "store")
    try:
        fact = memory.remember("agent", "The deploy target is eu-west-1")
        assert is_ulid(fact.id) and fact.agent_id == "agent" and fact.weight == 1.0
        assert fact.access_count == 0 and fact.superseded_by is None and fact.kind == "fact"
        results = memory.recall("agent", "deploy target")
        assert [(r.id, r.text) for r in results] == [(fact.id, fact.text)]
        assert results[0].score > 0
        assert memory.list("agent") == [memory.get(fact.id)]
    finally:
        memory.close()
    memory.close()  # idempotent


def test_top_k_default_is_8_and_explicit(mem: Memory) -> None:
    for i in range(12):
        mem.remember("a", f"note number {i} about widgets")
    assert len(mem.recall("a", "widgets")) == 8
    assert len(mem.recall("a", "widgets", top_k=3)) == 3
    assert len(mem.recall("a", "widgets", 20)) == 12


def test_recall_ranks_keyword_match_first(mem: Memory) -> None:
    seed(mem)
    assert mem.recall("agent", "who owns billing?")[0].text == "Alice owns the billing service"
    assert mem.recall("agent", "what is the rate limit")[0].text.startswith("The API rate limit")


def test_recall_is_deterministic_across_repeated_calls(mem: Memory) -> None:
    seed(mem)
    for i in range(30):
        mem.remember("agent", f"filler service note {i}")
    first = [(h.id, h.score) for h in mem.recall("agent", "service owner", top_k=10)]
    for _ in range(5):
        assert [(h.id, h.score) for h in mem.recall("agent", "service owner", top_k=10)] == first


def test_total_order_ties_oldest_first_then_id(mem: Memory) -> None:
    facts = [mem.remember("a", f"twin {i} alpha") for i in range(5)]
    hits = mem.recall_explain("a", "alpha", weights=SignalWeights(keyword=1.0, vector=0.0, recency=0.0))
    assert [h.id for h in hits] == [f.id for f in facts]
    assert len({h.score for h in hits}) == 5  # keyword ranks are distinct, so are the scores


def test_explanations_recompute_the_fused_score(mem: Memory) -> None:
    seed(mem)
    explained = mem.recall_explain("agent", "database service owner", confidence_weight=0.25)
    assert explained
    for hit in explained:
        r = hit.ranks
        assert r.k == 60
        recomputed = rrf_score(r.keyword_rank, r.vector_rank, r.recency_rank, hit.weights, r.k)
        assert r.fused_score == pytest.approx(recomputed, rel=1e-12)
        assert hit.ranking.base_score == r.fused_score
        assert hit.score == pytest.approx(r.fused_score * hit.ranking.factor, rel=1e-12)
        assert hit.ranking.policy == "confidence-v1"
    plain = mem.recall("agent", "database service owner", confidence_weight=0.25)
    assert [h.id for h in plain] == [h.id for h in explained]


def test_recall_explain_shows_supersedes_and_links(mem: Memory) -> None:
    mem.remember("a", "Alice leads the billing team")
    revision = mem.revise("a", "Alice leads the billing team", "Alice leads the payments team")
    link = mem.link("a", " Alice ", "PAYMENTS")
    assert (link.source, link.target, link.relation) == ("alice", "payments", "agent_link")
    hit = mem.recall_explain("a", "payments team")[0]
    assert hit.id == revision.fact.id
    assert hit.supersedes == revision.superseded_ids
    assert [ln.id for ln in hit.links] == [link.id]
    assert mem.link("a", "alice", "payments").id == link.id  # idempotent


def test_tombstoned_facts_are_excluded_but_listed(mem: Memory) -> None:
    seed(mem)
    revision = mem.revise("agent", "Staging is called kestrel", "Staging is called osprey")
    texts = [h.text for h in mem.recall("agent", "staging called", top_k=20)]
    assert "Staging is called kestrel" not in texts and texts[0] == "Staging is called osprey"
    old = mem.get(revision.superseded_ids[0])
    assert old.superseded_by == revision.fact.id
    assert old in mem.list("agent")
    assert old not in mem.list("agent", include_superseded=False)
    forgotten = mem.forget("agent", "Bob owns the search service")
    assert mem.get(forgotten[0]).superseded_by == "agent"
    assert all(h.id != forgotten[0] for h in mem.recall("agent", "search service owner", top_k=20))


def test_revise_replaces_every_exact_match_and_never_inherits_pin(mem: Memory) -> None:
    a = mem.remember("a", "port is 8080", confidence="unverified")
    b = mem.remember("a", "port is 8080", confidence="verified")
    mem.pin("a", "port is 8080")
    revision = mem.revise("a", "port is 8080", "port is 9090")
    assert sorted(revision.superseded_ids) == sorted([a.id, b.id])
    assert revision.fact.confidence == "unverified"  # min(inferred, lowest target)
    assert not revision.fact.pinned
    assert (
        mem.revise("a", "port is 9090", "port is 9191", confidence="verified").fact.confidence == "verified"
    )
    with pytest.raises(NotFound, match='target fact not found: "port is 8080"'):
        mem.revise("a", "port is 8080", "anything")
    with pytest.raises(InvalidInput):
        mem.revise("a", "port is 9191", "port is 9191")


def test_pin_unpin_and_superseded_pin_error(mem: Memory) -> None:
    fact = mem.remember("a", "never forget this")
    assert mem.pin("a", "never forget this") == [fact.id]
    assert mem.get(fact.id).pinned and mem.get(fact.id).pinned_at is not None
    assert mem.unpin("a", "never forget this") == [fact.id]
    assert not mem.get(fact.id).pinned
    mem.forget("a", "never forget this")
    with pytest.raises(InvalidInput, match="cannot pin a superseded fact"):
        mem.pin("a", "never forget this")
    with pytest.raises(NotFound):
        mem.pin("a", "no such fact")


def test_dedup_identical_texts(mem: Memory) -> None:
    first = mem.remember("a", "duplicate fact about llamas")
    mem.remember("a", "duplicate fact about llamas")
    mem.remember("a", "another fact about llamas")
    hits = mem.recall("a", "llamas")
    assert [h.text for h in hits].count("duplicate fact about llamas") == 1
    assert len(mem.list("a")) == 3  # no write-time dedup
    assert first.id in [h.id for h in hits] or len(hits) == 2


def test_aliases_expand_queries_and_are_never_returned(mem: Memory) -> None:
    target = mem.remember("a", "Our k8s clusters run in three regions")
    assert mem.recall("a", "kubernetes", weights=SignalWeights(recency=0.0)) == []
    alias = mem.alias("a", "kubernetes", ["k8s", "kube"])
    assert alias.kind == "alias" and alias.equivalents == ["k8s", "kube"]
    hits = mem.recall("a", "kubernetes", top_k=20)
    assert [h.id for h in hits] == [target.id]
    assert all(h.id != alias.id for h in mem.recall("a", "kube k8s kubernetes", top_k=20))
    assert mem.aliases("a") == [alias]
    assert mem.stats("a").alias_count == 1 and mem.stats("a").fact_count == 1
    assert mem.recall("b", "kubernetes") == []  # aliases are per namespace


def test_shared_aliases_apply_in_all_scope(mem: Memory) -> None:
    mem.alias(SHARED_AGENT_ID, "postgres", ["postgresql"])
    fact = mem.remember("a", "we run postgresql 16")
    assert mem.recall("a", "postgres", scope="all")[0].id == fact.id


def test_scopes_agent_shared_and_all(mem: Memory) -> None:
    own = mem.remember("a", "agent private note about caching")
    shared = mem.remember_shared("shared note about caching")
    mem.remember("other", "other agent note about caching")
    assert [h.id for h in mem.recall("a", "caching")] == [own.id]
    assert [h.id for h in mem.recall("a", "caching", scope="shared")] == [shared.id]
    assert [h.id for h in mem.recall_shared("caching")] == [shared.id]
    assert {h.id for h in mem.recall("a", "caching", scope="all")} == {own.id, shared.id}
    assert {h.agent_id for h in mem.recall("a", "caching", scope="all")} == {"a", SHARED_AGENT_ID}


def test_min_confidence_and_confidence_weight(mem: Memory) -> None:
    weak = mem.remember("a", "server color is blue", confidence="unverified")
    strong = mem.remember("a", "server color is green", confidence="verified")
    mid = mem.remember("a", "server color is red")
    assert {h.id for h in mem.recall("a", "server color", min_confidence="verified")} == {strong.id}
    assert {h.id for h in mem.recall("a", "server color", min_confidence="inferred")} == {strong.id, mid.id}
    weighted = mem.recall_explain("a", "server color", confidence_weight=0.5)
    factors = {h.id: h.ranking.factor for h in weighted}
    assert factors == {weak.id: 0.5, strong.id: 1.5, mid.id: 1.0}
    assert weighted[0].id == strong.id
    for bad in (0.51, -0.1, float("nan"), float("inf")):
        with pytest.raises(InvalidInput):
            mem.recall("a", "server", confidence_weight=bad)
    with pytest.raises(InvalidInput):
        mem.recall("a", "server", min_confidence="certain")  # type: ignore[arg-type]


def test_min_relevance_cuts_relative_to_best(mem: Memory) -> None:
    seed(mem)
    everything = mem.recall_explain("agent", "billing service", top_k=20)
    best = everything[0].score
    assert everything[-1].score < best
    threshold = min(1.0, everything[-1].score / best + 1e-9)
    cut = mem.recall("agent", "billing service", top_k=20, min_relevance=threshold)
    assert [h.id for h in cut] == [h.id for h in everything if h.score >= threshold * best]
    assert 1 <= len(cut) < len(everything)


def test_sliding_window_weights_reproduce_recency(mem: Memory) -> None:
    facts = [mem.remember("a", f"entry {i} about topic") for i in range(12)]
    hits = mem.recall("a", "topic", top_k=5, weights=SignalWeights(keyword=0, vector=0, recency=1))
    assert [h.id for h in hits] == [f.id for f in reversed(facts[-5:])]


def test_empty_query_is_recency_only(mem: Memory) -> None:
    facts = [mem.remember("a", f"entry {i}") for i in range(3)]
    assert [h.id for h in mem.recall("a", "")] == [f.id for f in reversed(facts)]


def test_access_bookkeeping_one_write_counts(mem: Memory) -> None:
    fact = mem.remember("a", "counted fact about owls")
    mem.recall("a", "owls")
    mem.recall("a", "owls")
    stored = mem.get(fact.id)
    assert stored.access_count == 2 and stored.accessed_at >= fact.accessed_at


def test_recall_batch_skips_blank_and_matches_recall(mem: Memory) -> None:
    seed(mem)
    results = mem.recall_batch("agent", ["billing", "  ", "rate limit"], top_k=2)
    assert [r.query for r in results] == ["billing", "rate limit"]
    assert [h.id for h in results[0].hits] == [h.id for h in mem.recall("agent", "billing", 2)]
    assert all(r.error is None for r in results)


def test_checkpoints_save_latest_get_list(mem: Memory) -> None:
    with pytest.raises(NoCheckpoint, match='no checkpoints for agent "a"'):
        mem.checkpoint_latest("a")
    first = mem.checkpoint_save("a", {"step": 1})
    second = mem.checkpoint_save(
        "a", '{"step": 2}', messages=[{"role": "user", "content": "hi"}], metadata={"source": "test"}
    )
    assert is_ulid(first.id) and first.id != second.id
    assert mem.checkpoint_latest("a") == second
    assert second.message_count == 1 and second.metadata == {"source": "test"}
    assert mem.checkpoint_get("a", first.id) == first
    assert mem.checkpoint_list("a") == [second, first]
    with pytest.raises(NoCheckpoint):
        mem.checkpoint_get("a", "01ZZZZZZZZZZZZZZZZZZZZZZZZ")
    with pytest.raises(NoCheckpoint):
        mem.checkpoint_get("b", first.id)  # ids are scoped to their agent
    assert mem.checkpoint_save("a").state == {}


def test_corrupt_checkpoint_is_corrupt_record_not_absence(mem: Memory, gm_dir: Path) -> None:
    import sqlite3

    cp = mem.checkpoint_save("a", {"ok": True})
    with sqlite3.connect(gm_dir / "graymatter.db") as conn:
        conn.execute("UPDATE checkpoints SET state = '{broken' WHERE id = ?", (cp.id,))
    with pytest.raises(CorruptRecord) as info:
        mem.checkpoint_latest("a")
    assert not isinstance(info.value, NoCheckpoint | StorageError)


def test_stats_and_agents(mem: Memory) -> None:
    seed(mem)
    mem.remember_shared("shared")
    mem.checkpoint_save("cp-only", {})
    stats = mem.stats("agent")
    assert stats.fact_count == len(CORPUS) and stats.superseded_count == 0
    assert stats.oldest_at is not None and stats.newest_at is not None and stats.oldest_at <= stats.newest_at
    assert mem.agents() == sorted(["agent", SHARED_AGENT_ID, "cp-only"])


def test_agent_ids_are_used_unchanged(mem: Memory) -> None:
    mem.remember(" project ", "spaced namespace fact")
    mem.remember("проект", "unicode namespace fact")
    assert mem.recall("project", "namespace fact") == []
    assert len(mem.recall(" project ", "namespace fact")) == 1
    assert len(mem.recall("проект", "namespace fact")) == 1


def test_provenance_is_recorded(mem: Memory) -> None:
    fact = mem.remember(
        "a", "from mcp", provenance={"interface": "mcp", "client": "opencode", "token_id": "t1"}
    )
    stored = mem.get(fact.id)
    assert (stored.provenance.interface, stored.provenance.client, stored.provenance.token_id) == (
        "mcp",
        "opencode",
        "t1",
    )
    assert mem.recall_explain("a", "mcp")[0].provenance == stored.provenance
    with pytest.raises(InvalidInput):
        mem.remember("a", "x", provenance={"interface": "telepathy"})


def test_memory_context_manager_and_reopen(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    with make_memory(tmp_path / "s") as memory:
        fact = memory.remember("a", "persisted across opens")
    reopened = make_memory(tmp_path / "s")
    assert reopened.get(fact.id).text == "persisted across opens"


def test_config_limits_are_configurable(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory(config=MemoryConfig(max_text_bytes=10))
    memory.remember("a", "0123456789")
    with pytest.raises(InvalidInput, match="11 bytes; the limit is 10 bytes"):
        memory.remember("a", "0123456789a")


def test_receipts_name_the_keyword_source(mem: Memory) -> None:
    direct = mem.remember("a", "the quarterly budget was approved")
    mem.remember("a", "unrelated note about lunch")
    hits = {h.id: h for h in mem.recall_explain("a", "budget approved", top_k=5)}
    assert hits[direct.id].keyword_source == "match" and hits[direct.id].keyword_context_from is None
    assert all(hit.fused_position is None for hit in hits.values())  # nothing re-read without a cross-encoder
    for hit in hits.values():
        if hit.ranks.keyword_rank == 0:
            assert hit.keyword_source is None
        elif hit.keyword_source == "context":
            assert hit.keyword_context_from is not None


def test_informative_queries_return_only_relevant_facts(mem: Memory) -> None:
    seed(mem)
    assert mem.recall("agent", "xylophone quasar") == []  # informative words, no evidence: nothing
    explained = mem.recall_explain("agent", "who owns billing?", top_k=8)
    assert explained[0].text == "Alice owns the billing service"
    assert all(h.ranks.keyword_rank > 0 or h.ranks.vector_rank > 0 for h in explained)
    newest_first = [h.text for h in mem.recall("agent", "what is it?", top_k=3)]  # only stop-words
    assert newest_first == list(reversed(CORPUS))[:3]
    window = mem.recall("agent", "xylophone", top_k=2, weights=SignalWeights(keyword=0, vector=0, recency=1))
    assert [h.text for h in window] == list(reversed(CORPUS))[:2]


def test_vector_neighbours_below_the_floor_are_not_relevance(make_memory: Callable[..., Memory]) -> None:
    from graymatter.engine.embeddings import HashingEmbedder

    memory = make_memory(embedder=HashingEmbedder(256), config=MemoryConfig(min_vector_similarity=0.3))
    fact = memory.remember("a", "llamas graze on the andes plateau")
    assert memory.recall("a", "quantum chromodynamics lecture") == []
    hit = memory.recall_explain("a", "llamas graze andes", weights=SignalWeights(keyword=0.0))[0]
    assert hit.id == fact.id and hit.ranks.vector_rank == 1
