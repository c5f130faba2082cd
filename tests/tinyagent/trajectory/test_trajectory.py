"""Trajectory persistence: round trip, atomic replace, kill during save, privacy, symlinks, bounded load."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyagent.tools.specs import TOOL_SPECS
from tinyagent.trajectory.atomic import SaveError, write_private_atomic
from tinyagent.trajectory.encoding import dump_trajectory
from tinyagent.trajectory.files import FAULT_ENV, LoadError, load_trajectory, save_trajectory
from tinyagent.trajectory.models import ExitStatus, Timing, Trajectory
from tinyagent.types import Message, ToolCall


def sample(messages: int = 4, *, content: str = "hello") -> Trajectory:
    history = [Message(role="system", content="sys"), Message(role="user", content="task")]
    for index in range(messages):
        call_id = f"call_{index}"
        history.append(
            Message(
                role="assistant",
                content=content,
                tool_calls=[ToolCall(id=call_id, name="bash", arguments="{}")],
            )
        )
        history.append(Message(role="tool", content=content, tool_call_id=call_id, name="bash"))
    return Trajectory(
        tinyagent_version="0.1.0",
        task="task",
        provider="scripted",
        model="m",
        system_prompt="sys",
        messages=history,
        tools=list(TOOL_SPECS),
        timing=Timing(started_at="2026-01-01T00:00:00.000Z"),
    )


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    original = sample()
    original.exit_status = ExitStatus.STEP_LIMIT
    original.messages[2].provider_state = {"anthropic": {"thinking": [{"signature": "sig=="}]}}
    path = tmp_path / "run.json"
    save_trajectory(original, path)
    assert load_trajectory(path) == original
    assert path.read_bytes() == dump_trajectory(original)


def test_saved_files_are_private_and_parent_dirs_created_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "nested" / "run.json"
    old_umask = os.umask(0)
    try:
        save_trajectory(sample(), path)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # an existing, more open file becomes private on the next save
    path.chmod(0o644)
    save_trajectory(sample(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_no_temporary_files_are_left_behind(tmp_path: Path) -> None:
    for _ in range(3):
        save_trajectory(sample(), tmp_path / "run.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_refuses_to_write_through_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "run.json"
    link.symlink_to(victim)
    with pytest.raises(SaveError, match="refusing to write through a symlink"):
        save_trajectory(sample(), link)
    assert victim.read_text() == "precious"
    assert link.is_symlink()


def test_refuses_a_dangling_symlink_and_a_directory(tmp_path: Path) -> None:
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere" / "x.json")
    with pytest.raises(SaveError, match="symlink"):
        save_trajectory(sample(), dangling)
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(SaveError, match="not a regular file"):
        save_trajectory(sample(), tmp_path / "dir.json")


def test_failed_write_keeps_previous_file_and_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    save_trajectory(sample(1), path)
    before = path.read_bytes()
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where a directory is needed")
    with pytest.raises(SaveError, match="cannot prepare"):
        write_private_atomic(blocker / "run.json", b"{}")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocked", "run.json"]  # no temporary left
    # the same file failing mid-write: test_atomic_saves.py (a real EFBIG under a file-size limit)


FAULT_SCRIPT = """
import sys
from pathlib import Path
from tinyagent.trajectory.atomic import SaveError
from tinyagent.trajectory.files import save_trajectory
from tinyagent.trajectory.models import Trajectory
traj = Trajectory.model_validate_json(Path(sys.argv[2]).read_text())
results = []
for steps in range(4):
    traj.totals.steps = steps
    try:
        save_trajectory(traj, sys.argv[1])
        results.append("ok")
    except SaveError as exc:
        results.append(str(exc))
print(results)
"""


def test_fault_injection_fails_the_nth_and_later_saves(tmp_path: Path) -> None:
    source = tmp_path / "source.json"
    source.write_bytes(dump_trajectory(sample(1)))
    target = tmp_path / "run.json"
    out = subprocess.run(
        [sys.executable, "-c", FAULT_SCRIPT, str(target), str(source)],
        env={**os.environ, FAULT_ENV: "3"},
        capture_output=True,
        text=True,
        check=True,
    )
    injected = f"injected save failure ({FAULT_ENV})"
    assert out.stdout.strip() == str(["ok", "ok", injected, injected])
    assert load_trajectory(target).totals.steps == 1  # the last successful save is intact


KILL_SCRIPT = """
import sys
from pathlib import Path
from tinyagent.trajectory.files import save_trajectory
from tinyagent.trajectory.models import Trajectory
path = Path(sys.argv[1])
versions = [Trajectory.model_validate_json(Path(p).read_text()) for p in sys.argv[2:]]
save_trajectory(versions[0], path)
print("ready", flush=True)
i = 0
while True:
    i += 1
    save_trajectory(versions[i % len(versions)], path)
"""


def test_a_kill_during_save_leaves_a_complete_readable_file(tmp_path: Path) -> None:
    small = sample(2, content="small")
    large = sample(400, content="x" * 4000)  # several MB: the write takes a while
    sources = []
    for name, traj in (("small.json", small), ("large.json", large)):
        source = tmp_path / name
        source.write_bytes(dump_trajectory(traj))
        sources.append(str(source))
    target = tmp_path / "out" / "run.json"
    rng = random.Random(1234)
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILL_SCRIPT, str(target), *sources], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        loaded = load_trajectory(target)
        assert loaded in (small, large)
        assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "category"),
    [
        (None, "missing"),
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"\xff\xfe{}", "encoding"),
        (b'{"format": "tinyagent-trajectory", ', "malformed"),
        (b'{"format": "tinyagent-trajectory"}', "schema"),
        (b"[1, 2]", "schema"),
        (b"[" * 100000 + b"]" * 100000, "malformed"),
    ],
)
def test_load_errors_name_their_category_without_echoing_content(
    tmp_path: Path, content: bytes | None, category: str
) -> None:
    path = tmp_path / "run.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(LoadError) as info:
        load_trajectory(path)
    assert info.value.category == category
    assert "tinyagent-trajectory" not in str(info.value)


def test_load_enforces_the_size_bound(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    save_trajectory(sample(50), path)
    with pytest.raises(LoadError) as info:
        load_trajectory(path, max_bytes=1000)
    assert info.value.category == "oversized"
    assert load_trajectory(path).task == "task"


def test_load_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as info:
        load_trajectory(tmp_path)
    assert info.value.category in ("not-a-file", "unreadable")


@given(
    contents=st.lists(st.text(max_size=200), min_size=1, max_size=8),
    status=st.sampled_from(list(ExitStatus)),
    steps=st.integers(min_value=0, max_value=10**9),
    cost=st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_round_trip_property(
    tmp_path: Path, contents: list[str], status: ExitStatus, steps: int, cost: float
) -> None:
    traj = sample(0)
    for index, text in enumerate(contents):
        traj.messages.append(
            Message(role="assistant", content=text, tool_calls=[ToolCall(id=f"i{index}", name="bash")])
        )
        traj.messages.append(Message(role="tool", content=text[::-1], tool_call_id=f"i{index}", name="bash"))
    traj.exit_status = status
    traj.totals.steps = steps
    traj.totals.cost_usd = cost
    path = tmp_path / "prop.json"
    save_trajectory(traj, path)
    assert load_trajectory(path) == traj


_odd_text = st.text(alphabet=st.sampled_from(["a", '"', "\\", "\n", "\t", "é", "💡", "\x00", "]", "{", " "]))


@settings(max_examples=100, deadline=None)
@given(
    contents=st.lists(_odd_text, min_size=0, max_size=6),
    state=st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.lists(st.integers(), max_size=3))),
    task=_odd_text,
)
def test_incremental_encoder_is_byte_identical_to_a_full_dump(contents, state, task) -> None:
    from tinyagent.trajectory.encoding import TrajectoryEncoder

    encoder = TrajectoryEncoder()
    traj = sample(0)
    traj.task = task
    assert encoder.encode(traj) == dump_trajectory(traj)
    for index, text in enumerate(contents):  # the history grows as in a run; every save re-checked
        call_id = f"c{index}"
        traj.messages.append(
            Message(
                role="assistant",
                content=text,
                tool_calls=[ToolCall(id=call_id, name="bash", arguments=text)],
                provider_state={"p": state} if state is not None else None,
            )
        )
        traj.messages.append(Message(role="tool", content=text, tool_call_id=call_id, name="bash"))
        traj.totals.steps += 1
        assert encoder.encode(traj) == dump_trajectory(traj)
    other = sample(2, content="other")  # a different history: nothing stale is reused
    assert encoder.encode(other) == dump_trajectory(other)
    empty = traj.model_copy(update={"messages": []})
    assert encoder.encode(empty) == dump_trajectory(empty)
    traj.tools = traj.tools[:2]  # other tools, model and status: nothing cached goes stale
    traj.model = "other-model"
    traj.exit_status = ExitStatus.SUBMITTED
    assert encoder.encode(traj) == dump_trajectory(traj)
