"""benchmarks/locomo.py: which systems it measures, and how it judges the embed extra."""

from __future__ import annotations

from datetime import UTC, datetime

from benchmarks.locomo_data import session_time

from benchmarks import locomo


def _result(hit: float, mrr: float) -> dict[str, object]:
    part = {"hit_at_k": hit, "mrr": mrr}
    return {"overall": part, "splits": {"held-out": part}}


def test_every_retrieval_change_has_its_ablation_row() -> None:
    for task in ("turns", "observations"):
        labels = [label for label, _ in locomo._systems(task)]
        assert labels[:2] == [locomo.BASELINE_LABEL, locomo.DEFAULT_LABEL]
        assert "  ablation: no coverage re-scoring" in labels
        assert "  ablation: no temporal intent" in labels
        assert "  ablation: no date re-scoring" in labels
        assert "  ablation: no subject re-scoring" in labels
        assert "  ablation: no synonym bridge" in labels
        assert "  ablation: facts written all at once (undated, the session-3 setup)" in labels
        assert (locomo.EMBED_LABEL in labels) is locomo.embed_installed()
    turns = [label for label, _ in locomo._systems("turns")]
    assert "  ablation: no conversation context" in turns


def test_the_embed_extra_must_not_be_worse_than_the_default_on_either_task() -> None:
    turns = {locomo.EMBED_LABEL: _result(0.80, 0.53), locomo.DEFAULT_LABEL: _result(0.78, 0.53)}
    observations = {locomo.EMBED_LABEL: _result(0.79, 0.57), locomo.DEFAULT_LABEL: _result(0.66, 0.58)}
    verdict = locomo._embed_verdict(turns, observations)
    assert verdict["turns_not_worse"] is True
    assert verdict["observations_not_worse"] is False  # better hit@10 does not excuse a lower MRR
    assert verdict["observation_target_met"] is True
    observations[locomo.EMBED_LABEL] = _result(0.79, 0.55)
    assert locomo._embed_verdict(turns, observations)["observation_target_met"] is False


def test_session_dates_are_read_as_the_moment_the_facts_are_written() -> None:
    assert session_time("7:31 pm on 21 January, 2022") == datetime(2022, 1, 21, 19, 31, tzinfo=UTC)
    assert session_time("12:05 am on 3 May 2023") == datetime(2023, 5, 3, 0, 5, tzinfo=UTC)
    assert session_time("noon, some day") is None
    assert session_time("1:00 pm on 3 Smarch, 2023") is None
