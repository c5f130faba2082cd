"""ScriptedProvider: a deterministic in-process model for tests and demos.

It replays a list of replies in order, one per `complete` call, and records every request it got.
A script is a JSON document (or the equivalent Python list/dict):

    {"replies": [
        {"content": "looking", "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "ls"}}],
         "usage": {"input_tokens": 100, "output_tokens": 10}, "cost_usd": 0.001},
        {"sleep": 30},                                    # wait (interruptible) before replying
        {"raise": "server", "message": "overloaded"},     # raise a ProviderError subclass
        {"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]}
     ],
     "record": "/tmp/requests.jsonl"}                     # optional: append each request as JSON

`arguments` may be an object (serialised to JSON) or a raw string (sent as-is, e.g. malformed JSON).
Missing tool-call ids are generated as `call_<step>_<index>`. `cost_usd` defaults to 0 (the scripted
model is free), so accounting stays deterministic. Raise kinds: auth, model, request, rate_limit,
server, connection, protocol. When the script is exhausted, `complete` raises ProviderError.
The CLI selects it with `--provider scripted` and takes the script path from `--base-url` (a path or
`file://` URL) or the `TINYAGENT_SCRIPT` environment variable.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tinyagent.errors import UsageError
from tinyagent.providers import base
from tinyagent.providers.base import OnText
from tinyagent.types import Completion, Message, ToolCall, ToolSpec, Usage

SCRIPT_ENV = "TINYAGENT_SCRIPT"

_ERRORS: dict[str, type[base.ProviderError]] = {
    "auth": base.ProviderAuthError,
    "model": base.ProviderModelNotFound,
    "request": base.ProviderRequestError,
    "rate_limit": base.ProviderRateLimited,
    "server": base.ProviderServerError,
    "connection": base.ProviderConnectionError,
    "protocol": base.ProviderProtocolError,
}


class ScriptError(UsageError, ValueError):
    """The script itself is invalid."""


def _reply_to_completion(reply: dict[str, Any], step: int, model: str) -> Completion:
    calls = []
    for index, raw in enumerate(reply.get("tool_calls") or []):
        arguments = raw.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(
            ToolCall(id=raw.get("id") or f"call_{step}_{index}", name=raw["name"], arguments=arguments)
        )
    usage_data = dict(reply.get("usage") or {})
    usage_data.setdefault("cost_usd", reply.get("cost_usd", 0.0))
    return Completion(
        message=Message(role="assistant", content=reply.get("content"), tool_calls=calls),
        usage=Usage.model_validate(usage_data),
        finish_reason="tool_calls" if calls else "stop",
        model=model,
        response_id=f"scripted-{step}",
    )


class ScriptedProvider:
    """Replays scripted replies; `requests` holds the messages of every call (newest last)."""

    name = "scripted"

    def __init__(
        self,
        *,
        model: str = "scripted",
        replies: Sequence[dict[str, Any]] = (),
        record: str | os.PathLike[str] | None = None,
    ) -> None:
        self.model = model
        self.replies = [dict(reply) for reply in replies]
        self.record = Path(record) if record else None
        self.requests: list[list[Message]] = []
        self.closed = False

    @classmethod
    def from_script(cls, script: dict[str, Any] | list[Any], *, model: str = "scripted") -> ScriptedProvider:
        """Build from a parsed script (a dict with `replies`, or a bare list of replies)."""
        if isinstance(script, list):
            script = {"replies": script}
        if not isinstance(script, dict) or not isinstance(script.get("replies"), list):
            raise ScriptError("a script must be an object with a 'replies' list")
        for position, reply in enumerate(script["replies"]):
            if not isinstance(reply, dict):
                raise ScriptError(f"reply {position} must be an object")
            for call in reply.get("tool_calls") or []:
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    raise ScriptError(f"reply {position}: every tool call needs a 'name'")
            if "raise" in reply and reply["raise"] not in _ERRORS:
                raise ScriptError(f"reply {position}: unknown raise kind {reply['raise']!r}")
        return cls(model=model, replies=script["replies"], record=script.get("record"))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, model: str = "scripted") -> ScriptedProvider:
        """Load a JSON script file (a plain path or a file:// URL)."""
        raw = os.fspath(path)
        if raw.startswith("file://"):
            raw = raw[len("file://") :]
        try:
            script = json.loads(Path(raw).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"cannot read script {raw}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ScriptError(f"script {raw} is not valid JSON (line {exc.lineno})") from exc
        return cls.from_script(script, model=model)

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool, on_text: OnText = None
    ) -> Completion:
        """Return the next scripted reply (after its optional sleep) or raise its scripted error."""
        step = len(self.requests) + 1
        self.requests.append(list(messages))  # the loop never mutates a message once appended
        if self.record is not None:
            entry = {
                "step": step,
                "stream": stream,
                "tools": [t.name for t in tools],
                "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in messages],
            }
            with self.record.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")
        if step > len(self.replies):
            raise base.ProviderRequestError(
                f"scripted provider: script exhausted after {len(self.replies)} replies"
            )
        reply = self.replies[step - 1]
        if reply.get("sleep"):
            time.sleep(float(reply["sleep"]))
        if "raise" in reply:
            kind = _ERRORS[reply["raise"]]
            raise kind(
                str(reply.get("message", f"scripted {reply['raise']} error")), status=reply.get("status")
            )
        completion = _reply_to_completion(reply, step, self.model)
        if stream and on_text is not None and completion.message.content:
            on_text(completion.message.content)
        return completion

    def close(self) -> None:
        """Nothing to release; marks the provider closed."""
        self.closed = True
