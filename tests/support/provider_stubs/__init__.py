"""Local HTTP stand-ins for the model providers tinyagent talks to (loopback only, stdlib only).

One server speaks all three wire formats, chosen by the request path:

    POST …/chat/completions   OpenAI Chat Completions (OpenAI, OpenRouter, Ollama /v1)
    POST …/messages           Anthropic Messages
    POST …/responses          OpenAI Responses (Codex)

Each request consumes the next entry of a script of replies. The answer is streamed (SSE) when the
request body says `"stream": true`, otherwise it is one JSON document. Every request is recorded
(path, lower-cased headers, parsed body). By default the server also checks the request the way the
real provider does (tool-call/result pairing per assistant turn, Anthropic alternation and id
pattern, required fields) and answers 400 with the provider's own error text when it is violated.

A reply is a dict (all keys optional):

    text          assistant text
    tool_calls    [{"name": "bash", "arguments": {...} | "raw json", "id": "call_x"}]
    thinking      {"thinking": "...", "signature": "..."}   (Anthropic thinking block)
    reasoning     {"summary": "...", "encrypted_content": "..."}   (Responses reasoning item; on
                  Chat Completions the summary becomes the message's `reasoning` text)
    usage         {"input": 100, "output": 10, "cache_read": 0, "cache_write": 0, "cost": 0.0012}
                  (input = fresh tokens; the wire fields are derived per provider; cost only on chat)
    finish        "stop" | "length" (Responses: "length" -> status incomplete)
    delay         seconds to sleep before answering
    fault         "429" | "500" | "503" | "malformed" | "drop" | "drop_mid_stream" | "stream_error"
                  | "truncate" (stream ends cleanly but early, without its terminator)
                  | "status" (answer `status` with `error` body)
    fault_at      streamed faults (drop_mid_stream, truncate, malformed, stream_error) happen before
                  this event number (default 2: after the first two events, before any text)
    retry_after   Retry-After header value for a 429/503
    status, error HTTP status and error JSON for fault "status" (e.g. 404 model_not_found)
    split         streamed tool-call argument fragments per call (default 3; 1 = whole, Ollama style)
    usage_chunk   Chat streaming: "empty" (choices: []), "null" (choices: null), "absent" (no choices
                  key) or "none" (no usage chunk even when asked); default "empty"
    ignore_stream answer with one JSON document even when the request asked for a stream
    linger        seconds to keep a stream's body open after its terminator event
    crlf          use CRLF line endings in the SSE stream
    comments      interleave SSE comment lines / Anthropic pings (default True)

Use in tests (threaded server, usable from subprocesses too because it listens on 127.0.0.1):

    with ProviderStub([{"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
                       {"text": "done"}]) as stub:
        provider = get_provider("openai", model="m", base_url=stub.base_url("openai"), api_key="k")
        ...
        stub.requests[0].body["messages"]

Standalone (for CLI or benchmark subprocesses):

    PYTHONPATH=tests python -m support.provider_stubs --script replies.json [--port 0] [--record FILE]

prints one JSON line `{"url": "http://127.0.0.1:PORT"}` on stdout once it listens, then serves until
killed. `replies.json` is a list of replies or {"replies": [...], "loop": true}. `StubProcess` wraps
this for tests and benchmarks; each record carries `received_at` / `responded_at` (time.time()).
"""

from .process import StubProcess
from .replies import RecordedRequest, StubReply, base_url_for
from .server import ProviderStub
from .validation import VALIDATORS

__all__ = ["VALIDATORS", "ProviderStub", "RecordedRequest", "StubProcess", "StubReply", "base_url_for"]
