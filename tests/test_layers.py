"""The import layers, read from the code's own imports (docs/architecture.md draws them).

graymatter: core < store < retrieval < engine < faces. The engine imports no face; a face imports the engine
and the layers below it, never another face, except the composition edges listed in ``FACE_EDGES``
(the HTTP service mounts the MCP server; the CLI starts the servers, lazily, inside the command that runs
them). tinyagent: each module group imports only groups of a lower rank. Neither package imports the other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {
    "graymatter": ROOT / "packages" / "graymatter" / "src" / "graymatter",
    "tinyagent": ROOT / "packages" / "tinyagent" / "src" / "tinyagent",
}

# graymatter: the layer of a module is the first package under graymatter/, or "core" for top-level modules.
GRAYMATTER_RANK = {"core": 0, "store": 1, "retrieval": 2, "engine": 3, "faces": 4}
# Modules of the package root that only wire the public API or `python -m`: they may import any layer.
GRAYMATTER_ENTRY = {"graymatter", "graymatter.__main__"}
# Face -> face imports that are allowed, and whether they must be lazy (inside a function).
FACE_EDGES = {
    ("http", "mcp_server"): False,  # the service mounts the MCP app at /mcp
    ("cli", "mcp_server"): True,  # `graymatter mcp serve`
    ("cli", "http"): True,  # `graymatter serve`, `mcp serve --http`
    ("http", "dashboard"): False,  # the service mounts the dashboard at / and /ui/
    ("cli", "dashboard"): True,  # `graymatter ui` issues the dashboard's one-time login link
    ("cli", "hooks"): True,  # `graymatter hook CLIENT EVENT`, `status` (reads the hook log)
    ("cli", "wiring"): True,  # `graymatter init`, `graymatter doctor`
    ("wiring", "hooks"): True,  # `graymatter hooks doctor` reads the hook log
}

# tinyagent: rank of each top-level module or package; imports may only go to a lower or equal rank.
TINYAGENT_RANK = {
    "errors": 0,
    "defaults": 0,
    "types": 0,
    "validation": 0,
    "keys": 0,
    "prompts": 1,
    "pricing": 1,
    "windows": 1,
    "config": 1,
    "providers": 2,
    "tools": 2,
    "mcpclient": 2,
    "trajectory": 2,
    "output": 3,
    "loop": 4,
    "runner": 5,
    "resume": 6,
    "cli": 7,
    "__main__": 8,
}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    target: str  # dotted module name
    lazy: bool  # inside a function body
    line: int


def module_name(package: str, path: Path) -> str:
    relative = path.relative_to(SOURCES[package].parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(package: str) -> Iterator[Import]:
    """Every import statement of a package, top-level or inside functions, with absolute targets."""
    for path in sorted(SOURCES[package].rglob("*.py")):
        importer = module_name(package, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        lazy_lines = {
            inner.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for inner in ast.walk(node)
            if isinstance(inner, ast.Import | ast.ImportFrom)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(importer, path.name == "__init__.py", node)
                targets = [base]
                # `from graymatter.faces import http` imports the submodule `graymatter.faces.http`.
                targets += [
                    f"{base}.{alias.name}" for alias in node.names if _is_module(f"{base}.{alias.name}")
                ]
            else:
                continue
            for target in targets:
                yield Import(importer, target, node.lineno in lazy_lines, node.lineno)


def _is_module(dotted: str) -> bool:
    top = dotted.split(".")[0]
    if top not in SOURCES:
        return False
    path = SOURCES[top].parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def graymatter_layer(module: str) -> tuple[str, str | None]:
    """(layer, face) of a graymatter module."""
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and not (SOURCES["graymatter"] / parts[1]).is_dir()):
        return "core", None
    layer = parts[1]
    face = parts[2] if layer == "faces" and len(parts) > 2 else None
    return layer, face


def test_the_packages_never_import_each_other() -> None:
    crossings = [
        f"{i.importer}:{i.line} imports {i.target}"
        for package, other in (("graymatter", "tinyagent"), ("tinyagent", "graymatter"))
        for i in imports_of(package)
        if i.target.split(".")[0] == other
    ]
    assert crossings == []


def graymatter_violations() -> list[str]:
    """Every graymatter import that goes up a layer or across faces outside ``FACE_EDGES``."""
    violations = []
    for i in imports_of("graymatter"):
        if i.importer in GRAYMATTER_ENTRY or not i.target.startswith("graymatter"):
            continue
        if i.target == "graymatter" and i.importer.startswith("graymatter."):
            continue  # `from graymatter import __version__`: the package root's constant
        (src_layer, src_face), (dst_layer, dst_face) = (
            graymatter_layer(i.importer),
            graymatter_layer(i.target),
        )
        if GRAYMATTER_RANK[dst_layer] > GRAYMATTER_RANK[src_layer]:
            violations.append(f"{i.importer}:{i.line} ({src_layer}) imports {i.target} ({dst_layer})")
        elif src_layer == dst_layer == "faces" and src_face != dst_face and dst_face is not None:
            edge = (src_face, dst_face)
            if edge not in FACE_EDGES:
                violations.append(f"{i.importer}:{i.line}: face {src_face} imports face {dst_face}")
            elif FACE_EDGES[edge] and not i.lazy:
                violations.append(f"{i.importer}:{i.line}: face {src_face} must import {dst_face} lazily")
    return violations


def test_graymatter_layers_only_import_downwards() -> None:
    assert graymatter_violations() == []


def test_graymatter_core_is_stdlib_and_pydantic_only() -> None:
    heavy = {"mcp", "starlette", "uvicorn", "psycopg", "psycopg_pool", "numpy", "httpx", "rich"}
    violations = [
        f"{i.importer}:{i.line} imports {i.target}"
        for i in imports_of("graymatter")
        if graymatter_layer(i.importer)[0] == "core"
        and i.importer not in GRAYMATTER_ENTRY
        and not i.lazy
        and i.target.split(".")[0] in heavy
    ]
    assert violations == []


def _tinyagent_group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def tinyagent_violations() -> list[str]:
    """Every tinyagent import from a group to a group of a higher rank."""
    violations = []
    for i in imports_of("tinyagent"):
        if not i.target.startswith("tinyagent.") or i.importer == "tinyagent":
            continue
        src, dst = _tinyagent_group(i.importer), _tinyagent_group(i.target)
        assert src in TINYAGENT_RANK, (
            f"{i.importer}: add its group to TINYAGENT_RANK and docs/architecture.md"
        )
        assert dst in TINYAGENT_RANK, f"{i.target}: add its group to TINYAGENT_RANK and docs/architecture.md"
        if TINYAGENT_RANK[dst] > TINYAGENT_RANK[src]:
            violations.append(f"{i.importer}:{i.line} ({src}) imports {i.target} ({dst})")
    return violations


def test_tinyagent_groups_only_import_lower_ranks() -> None:
    assert tinyagent_violations() == []


@pytest.mark.parametrize("package", sorted(SOURCES))
def test_the_layer_reader_sees_the_imports(package: str) -> None:
    # Guard against a reader that silently finds nothing (which would make every rule above pass).
    found = [i for i in imports_of(package) if i.target.startswith(package + ".")]
    assert len(found) > 50
    assert any(i.lazy for i in found)


@pytest.mark.parametrize(
    ("package", "module", "line", "checker"),
    [
        ("graymatter", "engine/lifecycle.py", "from graymatter.faces.cli import main", graymatter_violations),
        ("graymatter", "store/base.py", "import graymatter.engine.memory", graymatter_violations),
        (
            "graymatter",
            "faces/mcp_server/tools.py",
            "from graymatter.faces.http import security",
            graymatter_violations,
        ),
        ("graymatter", "faces/cli/__init__.py", "import graymatter.faces.http", graymatter_violations),
        ("tinyagent", "providers/base.py", "from tinyagent.loop import agent", tinyagent_violations),
    ],
)
def test_the_rules_catch_an_injected_violation(
    package: str, module: str, line: str, checker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    copy = tmp_path / package
    shutil.copytree(SOURCES[package], copy)
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    monkeypatch.setitem(SOURCES, package, copy)
    assert checker(), f"{line!r} in {module} went unnoticed"
