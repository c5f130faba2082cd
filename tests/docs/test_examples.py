"""Every shell and Python block in the README and in docs/ runs, so no example can rot.

Each markdown file's ``sh``/``bash``/``python`` blocks run in order as one bash script (Python blocks as
``python - <<EOF`` pieces), the way a reader pastes them into one terminal: in a fresh temporary directory,
with a fresh HOME, the project's commands first on PATH, no product settings or provider keys in the
environment and no network use expected. A block that starts a background server must stop it; whatever is
left is killed with the script's process group. Every fence must name its language, so a shell example
cannot hide in an unlabelled block; synopses and sample output use ``text``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.env import hermetic_env
from support.warm import private_runtime

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
SHELL = {"sh", "bash", "shell"}
PYTHON = {"python", "py"}
TIMEOUT_S = 600
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, first line number and text."""

    language: str
    line: int
    text: str


def fenced_blocks(markdown: str) -> list[Block]:
    """The fenced code blocks of ``markdown`` in order (info string's first word as the language)."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        language = (opening.group("info").split() or [""])[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        blocks.append(Block(language, i + 1, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def script_for(document: Path, blocks: list[Block]) -> str:
    """One bash script running the document's shell and Python blocks in order."""
    parts = ["set -euo pipefail"]
    for block in blocks:
        where = f"{document.relative_to(ROOT)}:{block.line}"
        parts.append(f"echo '--- block {where}' >&2")
        if block.language in SHELL:
            parts.append(block.text)
        elif block.language in PYTHON:
            parts.append(f"python - <<'GRAYMATTER_DOCS_PYTHON'\n{block.text}GRAYMATTER_DOCS_PYTHON")
    return "\n".join(parts) + "\n"


def _runnable(document: Path) -> list[Block]:
    return [b for b in fenced_blocks(document.read_text("utf-8")) if b.language in SHELL | PYTHON]


def test_every_fence_names_its_language() -> None:
    unlabelled = [
        f"{doc.relative_to(ROOT)}:{block.line}"
        for doc in DOCUMENTS
        for block in fenced_blocks(doc.read_text("utf-8"))
        if not block.language
    ]
    assert not unlabelled, f"fences without a language (use text for synopses and output): {unlabelled}"


def test_block_parser_keeps_order_languages_and_text() -> None:
    text = "intro\n```sh\necho one\n```\n\n  ```python\n  print(2)\n  ```\n```text\nx\n```\n"
    blocks = fenced_blocks(text)
    assert [(b.language, b.line, b.text) for b in blocks] == [
        ("sh", 2, "echo one\n"),
        ("python", 6, "print(2)\n"),
        ("text", 9, "x\n"),
    ]


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A private XDG_RUNTIME_DIR: the warm server the examples' short commands launch (docs/cli.md) serves
    this document's later commands and is ended afterwards."""
    yield from private_runtime("gmd-")


@pytest.mark.parametrize(
    "document", [d for d in DOCUMENTS if _runnable(d)], ids=lambda d: str(d.relative_to(ROOT))
)
def test_examples_run(document: Path, tmp_path: Path, runtime: Path) -> None:
    work = tmp_path / "work"
    home = tmp_path / "home"
    work.mkdir()
    home.mkdir(mode=0o700)
    bin_dir = str(Path(sys.executable).parent)
    env = hermetic_env(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        GRAYMATTER_DOCS_REPO=str(ROOT),
        XDG_RUNTIME_DIR=str(runtime),
    )
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    proc = subprocess.Popen(
        ["bash", "-c", script_for(document, _runnable(document))],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=TIMEOUT_S)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # background servers a block forgot to stop
        except ProcessLookupError:
            pass
        proc.wait()
    assert proc.returncode == 0, f"an example in {document.relative_to(ROOT)} failed:\n{output[-4000:]}"


def test_readme_speaks_to_users_not_to_the_tracker() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    internal = re.findall(r"\bissue \d+|\bas fast as Go\b|\bH\d\b|\bhelper\b", readme, flags=re.I)
    assert not internal, f"internal wording in README.md: {internal}"
