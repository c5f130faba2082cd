"""Decay, pruning, pins, background consolidation and LLM summarisation (propose-then-apply)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.lifecycle import apply_summary, decayed_weight, propose_summary
from graymatter.engine.summarisers import (
    AnthropicSummariser,
    OllamaSummariser,
    OpenAISummariser,
    parse_summary,
    resolve_summariser,
)
from graymatter.errors import ProviderError
from graymatter.models import ConsolidationReport, utcnow
from support.embedding_stub import EmbeddingProviderStub

DAY = timedelta(days=1)


def test_decay_is_idempotent_and_follows_half_life(mem: Memory) -> None:
    fact = mem.remember("a", "decaying fact")
    later = fact.accessed_at + timedelta(days=30)
    report = mem.consolidate("a", now=later)
    assert report.decayed == 1
    weight = mem.get(fact.id).weight
    assert weight == pytest.approx(0.5, rel=1e-6)  # one 30-day half-life
    assert mem.consolidate("a", now=later).decayed == 0  # same moment: nothing changes
    assert mem.get(fact.id).weight == weight
    assert decayed_weight(mem.get(fact.id), later - DAY, 720) == weight  # never rises
    assert report == ConsolidationReport.model_validate(report.model_dump())  # what validation builds
    assert report.model_fields_set == set(ConsolidationReport.model_fields)


def test_prune_below_floor_unless_pinned(mem: Memory) -> None:
    doomed = mem.remember("a", "forgotten after 200 days")
    kept = mem.remember("a", "pinned survives")
    mem.pin("a", "pinned survives")
    retired = mem.remember("a", "tombstone decays too")
    mem.forget("a", "tombstone decays too")
    report = mem.consolidate("a", now=utcnow() + timedelta(days=200))
    assert sorted(report.pruned) == sorted([doomed.id, retired.id])
    assert [f.id for f in mem.list("a")] == [kept.id]
    assert mem.get(kept.id).weight == 1.0


def test_pinned_facts_are_exempt_for_many_cycles(mem: Memory) -> None:
    pinned = mem.remember("a", "critical fact")
    mem.pin("a", "critical fact")
    start = utcnow()
    for cycle in range(1, 61):
        mem.consolidate("a", now=start + cycle * 2 * DAY)
    assert mem.get(pinned.id).weight == 1.0
    mem.unpin("a", "critical fact")
    mem.consolidate("a", now=start + 120 * DAY)
    assert mem.get(pinned.id).weight == pytest.approx(0.0625, rel=1e-3)  # unpinning restores staleness


def test_recall_keeps_frequently_used_facts_fresh(mem: Memory) -> None:
    used = mem.remember("a", "used fact about zebras")
    unused = mem.remember("a", "unused fact about lions")
    assert [h.id for h in mem.recall("a", "zebras", top_k=1)] == [used.id]
    assert mem.get(used.id).accessed_at > used.accessed_at and mem.get(unused.id).access_count == 0
    mem.store.record_access([used.id], used.accessed_at + timedelta(days=10))  # a recall ten days later
    mem.consolidate("a", now=used.accessed_at + timedelta(days=60))
    assert mem.get(used.id).weight == pytest.approx(2 ** (-50 / 30), rel=1e-3)
    assert mem.get(unused.id).weight == pytest.approx(2 ** (-60 / 30), rel=1e-3)


class BlockingSummariser:
    """An in-process summariser that waits until released (proves the caller is not blocked)."""

    name = "test:blocking"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls: list[list[str]] = []

    def summarise(self, texts: Sequence[str], max_bytes: int) -> str:
        self.calls.append(list(texts))
        self.started.set()
        assert self.release.wait(30)
        return "summary of " + "; ".join(texts)


def test_background_consolidation_after_threshold_never_blocks(make_memory: Callable[..., Memory]) -> None:
    summariser = BlockingSummariser()
    memory = make_memory(config=MemoryConfig(consolidate_threshold=3), summariser=summariser)
    facts = [
        memory.remember("a", f"fact {i}", confidence="verified" if i else "unverified") for i in range(3)
    ]
    memory.wait_for_background()  # 3rd write: a cycle ran; 3 live facts are not above the threshold
    assert summariser.calls == []
    facts += [memory.remember("a", f"fact {i}", confidence="verified") for i in range(3, 6)]
    assert summariser.started.wait(30)  # the 6th write started a cycle that now waits on the model ...
    extra = memory.remember("a", "written while consolidation runs")  # ... and writes still go through
    assert memory.get(extra.id).live
    summariser.release.set()
    memory.wait_for_background()
    assert memory.last_consolidation_error is None
    assert summariser.calls == [["fact 0", "fact 1", "fact 2"]]  # the weakest half, oldest first
    consumed = [f for f in memory.list("a") if f.superseded_by not in (None, "agent")]
    assert [f.id for f in consumed] == [f.id for f in facts[:3]]
    summary = memory.get(consumed[0].superseded_by or "")
    assert summary.text == "summary of fact 0; fact 1; fact 2"
    assert summary.confidence == "unverified"  # the lowest consumed label
    assert summary.provenance.interface == "consolidation" and summary.provenance.client == "test:blocking"
    assert {f.superseded_by for f in consumed} == {summary.id}
    assert memory.store.bump_write_counter("a") == 2  # reset when the cycle started; the extra write counts


def test_extra_triggers_are_dropped_not_queued(make_memory: Callable[..., Memory]) -> None:
    summariser = BlockingSummariser()
    memory = make_memory(
        config=MemoryConfig(consolidate_threshold=2, max_async_consolidations=1), summariser=summariser
    )
    memory.remember_many("a", ["fact 0", "fact 1"])
    memory.wait_for_background()
    memory.remember_many("a", ["fact 2", "fact 3"])
    assert summariser.started.wait(30)
    for i in range(4, 10):
        memory.remember("a", f"fact {i}")  # triggers while the only slot is busy are dropped
    summariser.release.set()
    memory.wait_for_background()
    assert len(summariser.calls) == 1


def test_background_cycles_reuse_their_workers_and_connections(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory(config=MemoryConfig(consolidate_threshold=1, max_async_consolidations=2))
    for i in range(30):  # every write triggers a cycle
        memory.remember_many("a" if i % 2 else "b", [f"fact {i}"])
        memory.wait_for_background()
    workers = list(memory._background._workers)
    assert 1 <= len(workers) <= 2 and all(w.is_alive() for w in workers)  # not one thread per cycle
    assert len(memory.store._connections) <= 1 + len(workers)  # this thread's and one per worker, kept
    assert memory.store.bump_write_counter("a") == 1  # each cycle reset the counter when it started
    memory.close()
    for worker in workers:
        worker.join(5)
    assert not any(w.is_alive() for w in workers)  # closing lets them exit


@pytest.mark.parametrize("provider", ["ollama", "openai", "anthropic"])
def test_llm_summarisation_over_http(
    provider: str, provider_stub: EmbeddingProviderStub, make_memory: Callable[..., Memory]
) -> None:
    base = provider_stub.base_url
    summariser = {
        "ollama": OllamaSummariser(base, "llama3.2"),
        "openai": OpenAISummariser(f"{base}/v1", "test-key", "gpt-test"),
        "anthropic": AnthropicSummariser(base, "test-key", "claude-test"),
    }[provider]
    memory = make_memory(
        config=MemoryConfig(consolidate_threshold=3, async_consolidate=False), summariser=summariser
    )
    facts = [memory.remember("a", f"weak fact {i}") for i in range(5)]
    memory.pin("a", "weak fact 0")
    report = memory.consolidate("a")
    assert report.summariser == summariser.name and report.summariser_error is None
    assert report.summary_fact_id is not None and len(report.consumed_ids) == 2
    assert facts[0].id not in report.consumed_ids  # pinned facts are never summarised
    assert memory.get(report.summary_fact_id).text == "Consolidated summary of the weak facts"
    posted = [b for m, p, b in provider_stub.requests if m == "POST"]
    assert len(posted) == 1 and "weak fact" in str(posted[0])


def test_unusable_model_answer_means_decay_and_prune_only(
    provider_stub: EmbeddingProviderStub, make_memory: Callable[..., Memory]
) -> None:
    provider_stub.generate_answer = "I cannot help with that."
    memory = make_memory(
        config=MemoryConfig(consolidate_threshold=2, async_consolidate=False),
        summariser=OllamaSummariser(provider_stub.base_url, "llama3.2"),
    )
    for i in range(4):
        memory.remember("a", f"fact {i}")
    report = memory.consolidate("a")
    assert report.summary_fact_id is None and "JSON" in (report.summariser_error or "")
    assert all(f.live for f in memory.list("a"))


def test_apply_skips_facts_changed_since_the_proposal(mem: Memory) -> None:
    facts = [mem.remember("a", f"fact {i}") for i in range(3)]

    class Fixed:
        name = "test:fixed"

        def summarise(self, texts: Sequence[str], max_bytes: int) -> str:
            return "merged"

    proposal = propose_summary(Fixed(), "a", facts, 1000)
    mem.pin("a", "fact 0")
    mem.forget("a", "fact 1")
    applied = apply_summary(mem.store, proposal, "test:fixed", utcnow())
    assert applied is not None
    summary, consumed = applied
    assert consumed == [facts[2].id] and mem.get(facts[0].id).live
    assert mem.get(facts[1].id).superseded_by == "agent"
    assert summary.text == "merged"
    assert apply_summary(mem.store, proposal, "test:fixed", utcnow()) is None  # nothing left to consume


def test_parse_summary_and_resolution() -> None:
    assert parse_summary('Sure! {"summary": " merged text "}', 100) == "merged text"
    for bad in ("no json", '{"summary": ""}', '{"other": 1}', "{broken"):
        with pytest.raises(ProviderError):
            parse_summary(bad, 100)
    with pytest.raises(ProviderError, match="limit"):
        parse_summary('{"summary": "' + "x" * 50 + '"}', 10)
    assert resolve_summariser(MemoryConfig()) is None  # off unless configured
    assert isinstance(resolve_summariser(MemoryConfig(summariser="ollama")), OllamaSummariser)
    with pytest.raises(ProviderError):
        resolve_summariser(MemoryConfig(summariser="anthropic"))


def test_fresh_facts_keep_full_weight_within_the_hour(mem: Memory) -> None:
    fact = mem.remember("a", "just written")
    report = mem.consolidate("a", now=fact.accessed_at + timedelta(minutes=59))
    assert report.decayed == 0 and mem.get(fact.id).weight == 1.0
    mem.consolidate("a", now=fact.accessed_at + timedelta(minutes=61))
    assert mem.get(fact.id).weight == pytest.approx(2 ** (-1 / 720), rel=1e-12)
