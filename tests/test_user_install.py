"""The README's user-level installs work: ``pipx install`` and ``uv tool install`` put the commands on a PATH.

Each tool is installed from PyPI into a fresh virtual environment, then installs one package from a copy of
its folder into a private tool home; the command it links must run from that bin directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _tool_python(tmp_path: Path, package: str) -> Path:
    env_dir = tmp_path / f"{package}-venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", package],
        check=True,
        env=_clean_env(),
        timeout=600,
    )
    return python


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIPX_", "UV_"))}
    return {**env, **extra}


def _copy(tmp_path: Path, wing: str) -> Path:
    source = tmp_path / "src" / wing
    shutil.copytree(ROOT / "packages" / wing, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    return source


@pytest.mark.parametrize("wing", ["graymatter", "tinyagent"])
def test_pipx_install_puts_the_command_on_its_bin_dir(tmp_path: Path, wing: str) -> None:
    python = _tool_python(tmp_path, "pipx")
    bin_dir = tmp_path / "bin"
    env = _clean_env(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(bin_dir))
    subprocess.run(
        [str(python), "-m", "pipx", "install", "--python", sys.executable, str(_copy(tmp_path, wing))],
        check=True,
        capture_output=True,
        env=env,
        timeout=900,
    )
    shown = subprocess.run([str(bin_dir / wing), "--version"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.startswith(f"{wing} ")


def test_uv_tool_install_puts_the_command_on_its_bin_dir(tmp_path: Path) -> None:
    python = _tool_python(tmp_path, "uv")
    uv = python.parent / "uv"
    bin_dir = tmp_path / "bin"
    env = _clean_env(
        UV_TOOL_DIR=str(tmp_path / "uv-tools"),
        UV_TOOL_BIN_DIR=str(bin_dir),
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        UV_PYTHON_DOWNLOADS="never",
    )
    subprocess.run(
        [str(uv), "tool", "install", "--python", sys.executable, str(_copy(tmp_path, "graymatter"))],
        check=True,
        capture_output=True,
        env=env,
        timeout=900,
    )
    command = [str(bin_dir / "graymatter"), "--version"]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.startswith("graymatter ")
