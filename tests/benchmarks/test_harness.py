"""The benchmark harness: statistics, tables, result files and the runner's command line."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import benchmarks.harness as harness
import numpy as np
import pytest
from benchmarks.__main__ import REGISTRY
from benchmarks.corpus import generate_facts, generate_queries
from benchmarks.locomo_data import Scores
from benchmarks.planted import generate
from benchmarks.sales_notes import generate_notes
from hypothesis import given
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(st.lists(finite, min_size=1, max_size=50), st.floats(min_value=0, max_value=100))
def test_percentile_matches_numpy_linear(values: list[float], pct: float) -> None:
    assert harness.percentile(values, pct) == pytest.approx(float(np.percentile(values, pct)), abs=1e-6)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        harness.percentile([], 50)


def test_latency_summary_reports_milliseconds() -> None:
    summary = harness.latency_summary([0.001, 0.002, 0.003, 0.004, 0.100])
    assert summary["n"] == 5
    assert summary["p50_ms"] == 3.0
    assert summary["max_ms"] == 100.0


@given(st.integers(min_value=0, max_value=200), st.integers(min_value=1, max_value=200))
def test_wilson_interval_contains_the_point_estimate(hits: int, total: int) -> None:
    hits = min(hits, total)
    low, high = harness.wilson_interval(hits, total)
    assert 0.0 <= low <= hits / total + 1e-12
    assert hits / total - 1e-12 <= high <= 1.0


def test_token_estimator_is_words_times_1_33() -> None:
    assert harness.estimate_tokens("one two three") == 4
    assert harness.estimate_tokens(" ".join(["w"] * 100)) == 133


def test_render_table_aligns_columns() -> None:
    text = harness.render_table(["name", "p50"], [["a", 1.5], ["longer", 12345.0]])
    lines = text.splitlines()
    assert lines[0] == "| name   | p50    |"
    assert lines[2] == "| a      | 1.50   |"
    assert lines[3] == "| longer | 12,345 |"


def test_write_json_atomic_is_private_and_complete(tmp_path: Path) -> None:
    target = tmp_path / "out" / "r.json"
    harness.write_json_atomic(target, {"a": [1, 2]})
    assert json.loads(target.read_text()) == {"a": [1, 2]}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


def test_generators_are_deterministic() -> None:
    assert generate_facts(300, seed=3) == generate_facts(300, seed=3)
    assert len(set(generate_facts(300, seed=3))) == 300
    assert generate_queries(20) == generate_queries(20)
    notes = generate_notes()
    assert notes == generate_notes()
    assert all(50 <= len(n.split()) <= 70 for n in notes)
    first, second = generate(seed=5), generate(seed=5)
    assert first.timeline == second.timeline
    assert first.planted == second.planted


def test_planted_corpus_shape() -> None:
    corpus = generate(seed=1, sessions=40)
    texts = [t for _, t in corpus.timeline]
    assert len(texts) == len(set(texts))
    sessions = [s for s, _ in corpus.timeline]
    assert sessions == sorted(sessions)
    for fact in corpus.planted:
        assert fact.text in texts
    for family in corpus.families:
        positions = [texts.index(v) for v in family.versions]
        assert positions == sorted(positions)
    assert corpus.retired_texts.isdisjoint({f.versions[-1] for f in corpus.families})


def test_locomo_scores_hit_and_reciprocal_rank() -> None:
    scores = Scores(k=2)
    scores.add(1, ["a", "b", "c"], frozenset({"b"}))
    scores.add(1, ["a", "b", "c"], frozenset({"c"}))
    scores.add(4, ["x"], frozenset({"y"}))
    assert scores.by_category()[1] == {"n": 2, "hit_at_k": 0.5, "mrr": round((1 / 2 + 1 / 3) / 2, 4)}
    assert scores.overall()["n"] == 3
    assert scores.by_category()[4]["mrr"] == 0.0


def _runner(*args: str, results: Path) -> subprocess.CompletedProcess[str]:
    env = harness.subprocess_env(**{harness.RESULTS_DIR_ENV: str(results)})
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_runner_lists_every_registered_benchmark(tmp_path: Path) -> None:
    proc = _runner("--list", results=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == list(REGISTRY)
    for name in ("mcp_roundtrip", "agent_overhead", "trajectory_save", "resume_validate", "postgres_scale"):
        assert name in REGISTRY


def test_runner_rejects_unknown_names_with_one_line(tmp_path: Path) -> None:
    proc = _runner("no_such_bench", results=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "unknown benchmark" in proc.stderr
    assert not any(tmp_path.iterdir())


def test_runner_quick_run_writes_result_json(tmp_path: Path) -> None:
    proc = _runner("synthetic_quality", "--quick", results=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    payload = json.loads((tmp_path / "synthetic_quality.quick.json").read_text())
    assert payload["benchmark"] == "synthetic_quality"
    assert payload["quick"] is True
    assert payload["machine"]["nproc"] == os.cpu_count()
    assert payload["results"]["tables"]
    assert "| " in proc.stdout
