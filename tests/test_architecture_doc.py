"""docs/architecture.md lists every module of both wings, one line each, and nothing that no longer exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
WINGS = ("graymatter", "tinyagent")
ENTRY = re.compile(r"^- `((?:graymatter|tinyagent)/[\w/]+\.py)` — \S", re.MULTILINE)


def source_modules() -> set[str]:
    found = set()
    for wing in WINGS:
        src = ROOT / "packages" / wing / "src"
        found |= {p.relative_to(src).as_posix() for p in (src / wing).rglob("*.py")}
    return found


def listed_modules() -> list[str]:
    return ENTRY.findall(DOC.read_text(encoding="utf-8"))


def test_every_module_is_listed_once() -> None:
    listed = listed_modules()
    assert sorted(source_modules() - set(listed)) == [], "add these to docs/architecture.md"
    assert sorted({m for m in listed if listed.count(m) > 1}) == []


def test_no_listed_module_is_stale() -> None:
    assert sorted(set(listed_modules()) - source_modules()) == [], "remove these from docs/architecture.md"
