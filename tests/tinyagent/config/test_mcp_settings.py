"""MCP server settings: config entries, --mcp flags, memory (flag, environment, config) and their errors."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyagent.config.files import ConfigError
from tinyagent.config.mcp import MEMORY_SERVER, McpFlagError, parse_mcp_flags
from tinyagent.config.settings import resolve_settings


def _args(tmp_path: Path, config: str | None = None, **overrides: object) -> argparse.Namespace:
    path = None
    if config is not None:
        path = tmp_path / "c.yaml"
        path.write_text(config, encoding="utf-8")
    base: dict[str, object] = {
        "cwd": str(tmp_path),
        "config": str(path) if path else None,
        "provider": "scripted",
    }
    base.update(overrides)
    return argparse.Namespace(**base)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "none"), "PATH": "/usr/bin", **extra}


def test_config_servers_then_flags_then_memory(tmp_path: Path) -> None:
    config = (
        "mcp_servers:\n  a:\n    command: one\n  b:\n    url: http://127.0.0.1:1/mcp\nmemory: graymatter\n"
    )
    settings = resolve_settings(_args(tmp_path, config, mcp=["a=two --x 'y z'"]), _env(tmp_path))
    servers = dict(settings.mcp_servers)
    assert list(servers) == ["a", "b", MEMORY_SERVER]
    assert (servers["a"].command, servers["a"].args) == ("two", ["--x", "y z"])  # the flag wins
    assert servers[MEMORY_SERVER].args == ["mcp", "serve"]  # no --dir unless the user set one
    assert settings.memory


def test_memory_from_the_environment_and_an_explicit_store(tmp_path: Path) -> None:
    env = _env(tmp_path, TINYAGENT_MEMORY="1", GRAYMATTER_OLLAMA_URL="http://127.0.0.1:9", OPENAI_API_KEY="k")
    settings = resolve_settings(_args(tmp_path, memory_dir="/data/store"), env)
    [(name, server)] = settings.mcp_servers
    assert name == MEMORY_SERVER
    assert server.args == ["mcp", "serve", "--dir", "/data/store"]
    assert server.command == str(Path(sys.executable).parent / "graymatter")
    assert server.env == {
        "GRAYMATTER_OLLAMA_URL": "http://127.0.0.1:9",
        "XDG_CONFIG_HOME": str(tmp_path / "none"),
    }


def test_no_memory_flag_beats_the_config(tmp_path: Path) -> None:
    settings = resolve_settings(_args(tmp_path, "memory: graymatter\n", memory=False), _env(tmp_path))
    assert not settings.memory and settings.mcp_servers == ()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("mcp_servers:\n  a:\n    command: x\n    url: http://h/mcp\n", "exactly one of command"),
        ("mcp_servers:\n  a: {}\n", "exactly one of command"),
        ("mcp_servers:\n  a:\n    url: ftp://h\n", "url must start with http"),
        ("mcp_servers:\n  'a b':\n    command: x\n", "must be 1-32 letters"),
        ("mcp_servers:\n  a:\n    command: x\n    bearer_token_env: T\n", "url servers only"),
        ("memory: other\n", "memory"),
    ],
)
def test_invalid_server_config_is_a_config_error(tmp_path: Path, config: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_settings(_args(tmp_path, config), _env(tmp_path))


NAMES = st.from_regex(r"[A-Za-z0-9_-]{1,32}", fullmatch=True)
WORDS = st.lists(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1), min_size=1, max_size=5
)


@given(NAMES, WORDS)
def test_a_flag_round_trips_any_quoted_command(name: str, words: list[str]) -> None:
    [(parsed_name, server)] = parse_mcp_flags([f"{name}={shlex.join(words)}"])
    assert parsed_name == name
    assert [server.command, *server.args] == words


@pytest.mark.parametrize("flag", ["noequals", "=cmd", "bad name=cmd", "x=", "x='unclosed", "n" * 33 + "=c"])
def test_malformed_flags_are_usage_errors(flag: str) -> None:
    with pytest.raises(McpFlagError, match=r"^--mcp "):
        parse_mcp_flags([flag])
