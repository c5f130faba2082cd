"""Each wing installs on its own: tinyagent without the memory server's stack, graymatter without agent code.

Each test builds a fresh virtual environment, installs one distribution from ``packages/`` (non-editable, so
the wheel's real contents are what gets imported) and inspects what arrived.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVER_STACK = {"psycopg", "psycopg-binary", "psycopg-pool", "numpy", "uvicorn", "starlette", "mcp", "httpx"}

pytestmark = pytest.mark.slow


def _install(tmp_path: Path, wing: str) -> Path:
    """A fresh venv with one wing installed from a copy of its folder (a build never writes into the repo)."""
    source = tmp_path / wing
    shutil.copytree(ROOT / "packages" / wing, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(source)],
        check=True,
        cwd=tmp_path,
        env=environ,
        timeout=600,
    )
    return python


def _distributions(python: Path) -> set[str]:
    listing = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return {entry["name"].lower().replace("_", "-") for entry in json.loads(listing.stdout)}


def _importable(python: Path, module: str) -> bool:
    probe = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({module!r}) else 1)"
    return subprocess.run([str(python), "-c", probe], cwd="/", timeout=60).returncode == 0


def test_tinyagent_installs_without_the_memory_server_stack(tmp_path: Path) -> None:
    python = _install(tmp_path, "tinyagent")
    installed = _distributions(python)
    assert "tinyagent" in installed
    assert installed & SERVER_STACK == set()
    assert not _importable(python, "graymatter")
    version = subprocess.run(
        [str(python.parent / "tinyagent"), "--version"], capture_output=True, text=True, timeout=60, cwd="/"
    )
    assert version.returncode == 0 and version.stdout.startswith("tinyagent ")


def test_graymatter_installs_without_agent_code_or_the_team_driver(tmp_path: Path) -> None:
    python = _install(tmp_path, "graymatter")
    installed = _distributions(python)
    assert "graymatter" in installed and "tinyagent" not in installed
    assert not {"psycopg", "psycopg-binary", "psycopg-pool"} & installed  # the `postgres` extra brings them
    assert not _importable(python, "tinyagent")
    demo = subprocess.run(
        [str(python.parent / "graymatter"), "--version"], capture_output=True, text=True, timeout=60, cwd="/"
    )
    assert demo.returncode == 0 and demo.stdout.startswith("graymatter ")


def test_the_development_install_has_both_wings() -> None:
    # `make install` installs both distributions editable into the project's venv, which runs this suite.
    from importlib.metadata import version

    assert version("graymatter") and version("tinyagent")
    assert version("mcp") == "2.3.0"  # tinyagent's `mcp` extra (its MCP client tests need it)
    assert sys.prefix != sys.base_prefix
