"""Smoke test of benchmarks/agent_overhead.py's measuring path (tinyagent side only, two model calls)."""

from __future__ import annotations

from pathlib import Path

from benchmarks import agent_overhead


def test_tinyagent_run_is_measured_from_the_fixture_log(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = agent_overhead.run_agent(
        agent_overhead.TinyAgent(work), agent_overhead._stubs(), 2, tmp_path / "run"
    )
    assert result["exit_code"] == 0
    assert len(result["step_gaps_s"]) == len(result["step_wall_s"]) == len(result["service_s"]) == 2
    assert all(gap > 0 for gap in result["step_gaps_s"])
    assert 0 < result["to_first_request_s"] < result["wall_s"] + 1
    assert (tmp_path / "run" / "run.json").exists()


def test_durable_write_floor_is_measured(tmp_path: Path) -> None:
    durable = agent_overhead._durable_write_floor(tmp_path, 3)
    spawns = agent_overhead._bash_true_floor(3)
    assert len(durable) == 3 and all(sample > 0 for sample in durable)
    assert len(spawns) == 3 and all(sample > 0 for sample in spawns)


def test_fsync_off_variant_runs_the_same_cli(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    agent = agent_overhead.TinyAgentNoFsync(work)
    result = agent_overhead.run_agent(agent, agent_overhead._stubs(), 1, tmp_path / "run")
    assert result["exit_code"] == 0
    assert (tmp_path / "run" / "run.json").exists()
