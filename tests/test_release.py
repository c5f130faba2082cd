"""One version per package, read everywhere from one place, and a CHANGELOG whose top entry is it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import graymatter
import tinyagent
from support.env import hermetic_env

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "CHANGELOG.md"
STABILITY = ROOT / "docs" / "api-stability.md"


def _released_versions() -> list[str]:
    return re.findall(r"^## \[(\d+\.\d+\.\d+)\] — \d{4}-\d{2}-\d{2}$", CHANGELOG.read_text("utf-8"), re.M)


def test_both_packages_share_the_changelog_top_version() -> None:
    versions = _released_versions()
    assert versions, "CHANGELOG.md has no '## [X.Y.Z] — YYYY-MM-DD' entry"
    assert graymatter.__version__ == tinyagent.__version__ == versions[0]
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))), reverse=True)


def test_installed_metadata_and_version_flags_agree(tmp_path: Path) -> None:
    assert metadata.version("graymatter") == graymatter.__version__
    assert metadata.version("tinyagent") == tinyagent.__version__
    env = hermetic_env()
    for package, version in (("graymatter", graymatter.__version__), ("tinyagent", tinyagent.__version__)):
        shown = subprocess.run(
            [sys.executable, "-m", package, "--version"], capture_output=True, text=True, env=env, timeout=60
        )
        assert shown.stdout == f"{package} {version}\n"


def test_mcp_handshake_reports_the_same_version(tmp_path: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "release-test", "version": "1"},
        },
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "graymatter", "--dir", str(tmp_path / "gm"), "mcp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=hermetic_env(),
    )
    try:
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(initialize) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert reply["result"]["serverInfo"]["version"] == graymatter.__version__


def test_stability_notice_for_on_missing_names_the_next_minor() -> None:
    major, minor, _ = (int(part) for part in graymatter.__version__.split("."))
    text = STABILITY.read_text("utf-8")
    assert f'`on_missing` will default to `"empty"` in {major}.{minor + 1}.0' in text
    released = [
        section
        for section in CHANGELOG.read_text("utf-8").split("\n## [")[1:]
        if not section.startswith("Unreleased]")
    ]
    assert released[0].startswith(f"{graymatter.__version__}]")
    assert "on_missing" in released[0] and f"{major}.{minor + 1}.0" in released[0]
