"""Short CLI commands never pay for the MCP SDK, the HTTP stack or the engine's heavy parts."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("mcp", "mcp_types", "starlette", "uvicorn", "httpx", "httpx2", "anyio")


def imported_after(code: str) -> dict[str, bool]:
    probe = f"import sys\n{code}\nprint(__import__('json').dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_building_the_cli_parser_with_mcp_serve_imports_no_sdk() -> None:
    loaded = imported_after(
        "import graymatter.faces.cli.main, graymatter.faces.cli.parser as c; "
        "c.build_parser().parse_args(['mcp', 'serve'])"
    )
    assert not any(loaded.values()), loaded


def test_importing_the_server_module_defers_the_sdk() -> None:
    loaded = imported_after(
        "import graymatter.faces.mcp_server.server, graymatter.faces.cli.mcp_cmds, "
        "graymatter.faces.http.security"
    )
    assert not any(loaded.values()), loaded
