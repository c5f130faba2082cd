"""Size limits of the source: modules under 400 lines, functions under 60, unless a decision record says why.

An exception is granted by naming it in a file of ``docs/decisions/``: the module as
``packages/<wing>/src/<path>.py`` or a function as ``packages/<wing>/src/<path>.py:<function>``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_ROOTS = [ROOT / "packages" / "graymatter" / "src", ROOT / "packages" / "tinyagent" / "src"]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def decision_records() -> str:
    records = sorted((ROOT / "docs" / "decisions").glob("*.md"))
    return "\n".join(p.read_text(encoding="utf-8") for p in records)


def oversized(roots: list[Path], base: Path = ROOT) -> list[str]:
    """``path`` of every module over the line limit and ``path:function`` of every function over its limit."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            name = path.relative_to(base).as_posix()
            text = path.read_text(encoding="utf-8")
            if len(text.splitlines()) > MAX_MODULE_LINES:
                found.append(name)
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    assert node.end_lineno is not None
                    if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                        found.append(f"{name}:{node.name}")
    return found


def test_modules_and_functions_stay_small_or_have_a_decision_record() -> None:
    records = decision_records()
    unexplained = [item for item in oversized(SOURCE_ROOTS) if f"`{item}`" not in records]
    assert unexplained == [], "split these, or name them in a docs/decisions/ record that says why not"


def test_the_size_reader_finds_an_oversized_function(tmp_path: Path) -> None:
    module = tmp_path / "long.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    module.write_text(f"def long_one():\n{body}\n\n\ndef short_one():\n    return 1\n", encoding="utf-8")
    assert oversized([tmp_path], base=tmp_path) == ["long.py:long_one"]
