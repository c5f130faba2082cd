"""Project routing: root, store and agent id chosen by one rule (graymatter.routing)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graymatter.constants import SHARED_AGENT_ID
from graymatter.errors import InvalidInput
from graymatter.routing import find_git_root, normalise_agent_id, resolve_route
from graymatter.validation import agent_id as checked_agent_id
from support.env import hermetic_env

VALID = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "My Repo"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    return root


def test_git_root_above_the_cwd_wins_and_names_the_agent(repo: Path) -> None:
    route = resolve_route(env={}, cwd=repo / "src" / "deep")
    assert route.root == repo
    assert route.store_dir == repo / ".graymatter"
    assert route.agent_id == "my-repo"
    assert (route.source, route.store_source, route.agent_source) == ("git-root", "project", "root-name")


def test_plain_cwd_without_git(tmp_path: Path) -> None:
    here = tmp_path / "plain"
    here.mkdir()
    route = resolve_route(env={}, cwd=here)
    assert (route.root, route.source, route.agent_id) == (here, "cwd", "plain")
    assert route.store_dir == here / ".graymatter"


def test_a_worktree_git_file_counts(tmp_path: Path) -> None:
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text("gitdir: /elsewhere\n")
    assert find_git_root(tmp_path / "wt") == tmp_path / "wt"
    assert find_git_root(tmp_path) is None


@pytest.mark.parametrize("name", ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "QWEN_PROJECT_DIR"])
def test_project_dir_variables_beat_everything(repo: Path, tmp_path: Path, name: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    route = resolve_route(env={name: str(project)}, cwd=repo, payload_cwd=project)
    assert (route.root, route.source, route.store_dir) == (project, f"env:{name}", project / ".graymatter")


def test_claude_beats_gemini_and_qwen(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env = {"QWEN_PROJECT_DIR": str(b), "CLAUDE_PROJECT_DIR": str(a), "GEMINI_PROJECT_DIR": str(b)}
    assert resolve_route(env=env, cwd=tmp_path).root == a


@pytest.mark.parametrize("value", ["relative/dir", "/no/such/dir/anywhere"])
def test_a_bad_project_dir_is_an_error_not_a_fallback(tmp_path: Path, value: str) -> None:
    with pytest.raises(InvalidInput, match=r"^CLAUDE_PROJECT_DIR must name an existing absolute directory$"):
        resolve_route(env={"CLAUDE_PROJECT_DIR": value}, cwd=tmp_path)


def test_payload_cwd_outside_the_project_is_refused(tmp_path: Path) -> None:
    project, sibling = tmp_path / "p", tmp_path / "sibling"
    project.mkdir()
    sibling.mkdir()
    with pytest.raises(InvalidInput, match="outside the project named by \\$CLAUDE_PROJECT_DIR"):
        resolve_route(env={"CLAUDE_PROJECT_DIR": str(project)}, payload_cwd=sibling, cwd=tmp_path)
    inside = resolve_route(env={"CLAUDE_PROJECT_DIR": str(project)}, payload_cwd=project, cwd=tmp_path)
    assert inside.root == project


def test_payload_cwd_beats_the_process_cwd(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    route = resolve_route(env={}, payload_cwd=other, cwd=repo)
    assert (route.root, route.source) == (other, "payload-cwd")
    in_repo = resolve_route(env={}, payload_cwd=repo / "src", cwd=other)
    assert (in_repo.root, in_repo.source) == (repo, "git-root")
    missing = resolve_route(env={}, payload_cwd=tmp_path / "gone", cwd=other)
    assert (missing.root, missing.source) == (other, "cwd")


def test_dir_override_and_env_store_resolve_against_the_process_cwd(repo: Path) -> None:
    here = repo / "src"
    by_flag = resolve_route(env={"GRAYMATTER_DIR": "/x/env"}, cwd=here, dir_override="rel")
    assert (by_flag.store_dir, by_flag.store_source, by_flag.root) == (here / "rel", "--dir", repo)
    by_env = resolve_route(env={"GRAYMATTER_DIR": "envdir"}, cwd=here)
    assert (by_env.store_dir, by_env.store_source) == (here / "envdir", "env:GRAYMATTER_DIR")
    absolute = resolve_route(env={}, cwd=here, dir_override="/abs/store")
    assert absolute.store_dir == Path("/abs/store")


def test_agent_id_overrides(repo: Path) -> None:
    env = {"GRAYMATTER_AGENT_ID": "Env Agent"}
    assert resolve_route(env=env, cwd=repo).agent_id == "Env Agent"
    assert resolve_route(env=env, cwd=repo).agent_source == "env:GRAYMATTER_AGENT_ID"
    chosen = resolve_route(env=env, cwd=repo, agent_override="mine")
    assert (chosen.agent_id, chosen.agent_source) == ("mine", "override")
    with pytest.raises(InvalidInput, match="NUL"):
        resolve_route(env={}, cwd=repo, agent_override="a\x00b")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("graymatter", "graymatter"),
        ("My Project", "my-project"),
        ("Café_Olé", "cafe_ole"),
        ("__shared__", "shared"),
        ("..hidden..", "hidden"),
        ("a" * 100, "a" * 64),
        ("v1.2 -- beta!!", "v1.2-beta"),
    ],
)
def test_normalise_examples(name: str, expected: str) -> None:
    assert normalise_agent_id(name) == expected


def test_names_with_nothing_usable_hash_apart() -> None:
    first, second = normalise_agent_id("项目"), normalise_agent_id("工程")
    assert re.fullmatch(r"project-[0-9a-f]{8}", first) and first != second
    assert normalise_agent_id("") == normalise_agent_id("")


@given(st.text(max_size=200))
def test_normalised_ids_are_valid_stable_and_never_shared(name: str) -> None:
    agent = normalise_agent_id(name)
    assert VALID.fullmatch(agent)
    assert checked_agent_id(agent) == agent
    assert agent != SHARED_AGENT_ID
    assert normalise_agent_id(agent) == agent


def test_cli_default_store_follows_the_git_root(repo: Path) -> None:
    env = hermetic_env()
    env.pop("CLAUDE_PROJECT_DIR", None)
    command = [sys.executable, "-m", "graymatter", "remember", "a", "routed fact"]
    done = subprocess.run(
        command, cwd=repo / "src" / "deep", env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (repo / ".graymatter" / "graymatter.db").is_file()
    assert not (repo / "src" / "deep" / ".graymatter").exists()
    explicit = subprocess.run(
        [sys.executable, "-m", "graymatter", "--dir", "here", "remember", "a", "x"],
        cwd=repo / "src",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert explicit.returncode == 0, explicit.stderr
    assert (repo / "src" / "here" / "graymatter.db").is_file()


def test_mcp_stdio_without_dir_serves_the_project_named_by_the_client(tmp_path: Path) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    project, elsewhere = tmp_path / "Client Project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    env = hermetic_env(extra={"CLAUDE_PROJECT_DIR": str(project)})
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "graymatter", "mcp", "serve"], env=env, cwd=elsewhere
    )

    async def main() -> None:
        async with Client(params, mode="legacy") as client:
            added = await client.call_tool("memory_add", {"agent_id": "client-project", "text": "routed"})
            assert not added.is_error

    anyio.run(main)
    assert (project / ".graymatter" / "graymatter.db").is_file()
    assert not (elsewhere / ".graymatter").exists()
