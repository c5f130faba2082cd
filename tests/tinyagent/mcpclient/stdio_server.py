"""A tiny MCP server over stdio (raw JSON-RPC lines, no SDK), for the client's failure paths.

Tools: ``echo`` (text), ``add`` (structured, valid for its outputSchema), ``bad_add`` (structured content that
violates its outputSchema), ``die`` (the process exits mid-call), ``block`` (never answers). With
``--log FILE`` every call is appended to FILE (one line: tool name and pid); ``--extra NAME`` adds a tool
of that name (to change the tool set).
"""

from __future__ import annotations

import json
import os
import sys
import time

ARGS = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))

NUMBERS = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
SUM = {
    "type": "object",
    "properties": {"sum": {"type": "integer"}},
    "required": ["sum"],
    "additionalProperties": False,
}
TEXT = {"text": {"type": "string"}}
TOOLS = [
    {"name": "echo", "description": "Echo the text.", "inputSchema": {"type": "object", "properties": TEXT}},
    {"name": "add", "description": "Add two integers.", "inputSchema": NUMBERS, "outputSchema": SUM},
    {"name": "bad_add", "description": "Add, wrongly typed.", "inputSchema": NUMBERS, "outputSchema": SUM},
    {"name": "die", "description": "Exit mid-call.", "inputSchema": {"type": "object"}},
    {"name": "block", "description": "Never answer.", "inputSchema": {"type": "object"}},
]  # fmt: skip
if "--extra" in ARGS:
    TOOLS.append({"name": ARGS["--extra"], "description": "Extra.", "inputSchema": {"type": "object"}})


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(arguments: dict, name: str) -> dict:
    if name == "echo":
        return {"content": [{"type": "text", "text": f"echo: {arguments.get('text', '')}"}]}
    total = int(arguments.get("a", 0)) + int(arguments.get("b", 0))
    if name == "add":
        return {"content": [{"type": "text", "text": str(total)}], "structuredContent": {"sum": total}}
    if name == "bad_add":
        return {"content": [{"type": "text", "text": str(total)}], "structuredContent": {"sum": str(total)}}
    if name == "die":
        os._exit(3)
    if name == "block":
        time.sleep(3600)
    return {"content": [{"type": "text", "text": "unknown tool"}], "isError": True}


def main() -> None:
    log = ARGS.get("--log")
    for line in sys.stdin:
        request = json.loads(line)
        method, rid = request.get("method"), request.get("id")
        if rid is None:
            continue  # a notification
        if method == "initialize":
            answer = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stub", "version": "1"},
            }
        elif method == "tools/list":
            answer = {"tools": TOOLS}
        elif method == "tools/call":
            params = request["params"]
            if log:
                with open(log, "a", encoding="utf-8") as handle:
                    handle.write(f"{params['name']} {os.getpid()}\n")
            answer = result(params.get("arguments") or {}, params["name"])
        elif method == "ping":
            answer = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": answer})


if __name__ == "__main__":
    main()
