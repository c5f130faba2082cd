"""The MCP servers of one run: connected on the official SDK in one event-loop thread, called from the loop.

`McpHub(servers, cwd=..., timeout=...)` connects every configured server (`start()`), lists its tools and
offers them as `mcp__<server>__<tool>` specs. `call(name, arguments)` runs one tool call and always returns
one `ToolResult`: an output-schema mismatch (the SDK validates structured results against the tool's
`outputSchema`), a JSON-RPC error, a timeout or a dead server becomes an error result. A server that died is
restarted once per run (the call that saw it die is not retried: its outcome is unknown). `close()` shuts
every server down; the runner calls it at every ending. The SDK is imported only here, only when a server
is configured.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tinyagent.config.mcp import McpServerConfig
from tinyagent.errors import UsageError
from tinyagent.mcpclient.results import PREFIX, render_result, tool_spec
from tinyagent.tools.toolbox import ToolResult
from tinyagent.types import ToolSpec

__all__ = ["McpHub", "McpSetupError"]

CONNECT_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 10.0


class McpSetupError(UsageError, RuntimeError):
    """A configured MCP server could not be started or listed (reported before the run starts)."""


@dataclass
class _Server:
    """One configured server, its live client and its tools (tool name on the server -> spec offered)."""

    name: str
    config: McpServerConfig
    client: Any = None
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    stop: asyncio.Event | None = None
    task: asyncio.Future[None] | None = None
    restarted: bool = False
    dead: str | None = None  # why the server is gone for the rest of the run


class McpHub:
    """Connections to the run's MCP servers and the tool specs they offer."""

    def __init__(
        self,
        servers: Sequence[tuple[str, McpServerConfig]],
        *,
        cwd: str,
        timeout: float,
        output_cap: int,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.cwd = cwd
        self.timeout = timeout
        self.output_cap = output_cap
        self.environ = environ or {}
        self._servers = {name: _Server(name, config) for name, config in servers}
        self._routes: dict[str, tuple[str, str]] = {}  # offered name -> (server, tool)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tinyagent-mcp", daemon=True)
        self._current: concurrent.futures.Future[Any] | None = None
        self._interrupted = False
        self._closed = False

    # -- life cycle -----------------------------------------------------------------------------
    def start(self) -> list[ToolSpec]:
        """Connect every server and list its tools; the specs offered, in server then tool order."""
        self._thread.start()
        specs: list[ToolSpec] = []
        for server in self._servers.values():
            try:
                self._submit(self._connect(server)).result(CONNECT_TIMEOUT_S)
            except Exception as exc:
                self.close()
                raise McpSetupError(f"MCP server {server.name}: cannot start it ({_reason(exc)})") from None
            for tool, spec in server.tools.items():
                if spec.name in self._routes:
                    self.close()
                    raise McpSetupError(f"MCP server {server.name}: two tools are offered as {spec.name}")
                self._routes[spec.name] = (server.name, tool)
                specs.append(spec)
        return specs

    def close(self) -> None:
        """Shut every server down (idempotent); waits at most CLOSE_TIMEOUT_S."""
        if self._closed or not self._thread.is_alive():
            self._closed = True
            return
        self._closed = True
        try:
            self._submit(self._stop_all()).result(CLOSE_TIMEOUT_S)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT_S)

    def reopen(self) -> None:
        """Allow calls again after an interruption (the closing memory checkpoint is saved at any ending)."""
        self._interrupted = False

    def handles(self, name: str) -> bool:
        """Whether `name` is one of the offered MCP tools."""
        return name in self._routes

    def interrupt(self) -> None:
        """Abandon the call in flight (safe from a signal handler); later calls are not made."""
        self._interrupted = True
        current = self._current
        if current is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(current.cancel)

    # -- calls ------------------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call the offered tool `name`; exactly one result, errors included."""
        server_name, tool = self._routes[name]
        return self.call_tool(server_name, tool, arguments, shown=name)

    def call_tool(self, server_name: str, tool: str, arguments: dict[str, Any], *, shown: str) -> ToolResult:
        """Call `tool` of `server_name` (used by `call` and by the memory wiring)."""
        server = self._servers[server_name]
        if self._interrupted:
            return ToolResult("error: not executed: the run was interrupted", True)
        if server.dead is None and (server.task is None or server.task.done()):  # died between calls
            server.dead = self._restart(server)  # restart before sending: nothing was sent yet
        if server.dead is not None:
            return ToolResult(f"error: MCP server {server_name} is unavailable ({server.dead})", True)
        timeout = server.config.timeout or self.timeout
        future = self._submit(self._call(server, tool, arguments, timeout))
        self._current = future
        try:
            result: ToolResult = future.result(timeout + 5)
            return result
        except concurrent.futures.CancelledError:
            return ToolResult(f"error: {shown} interrupted; its outcome is unknown", True)
        except (TimeoutError, concurrent.futures.TimeoutError):
            future.cancel()
            return ToolResult(f"error: {shown} timed out after {timeout:g} s; its outcome is unknown", True)
        except _ServerDied as died:
            server.dead = problem = self._restart(server)
            note = "it was restarted" if problem is None else f"it could not be restarted ({problem})"
            return ToolResult(
                f"error: MCP server {server_name} stopped during {shown} ({died}); {note}; the call was not "
                "retried and its outcome is unknown",
                True,
            )
        finally:
            self._current = None

    def call_structured(self, server_name: str, tool: str, arguments: dict[str, Any]) -> Any:
        """The structured content of a successful call (validated by the SDK), else None."""
        server = self._servers[server_name]
        timeout = server.config.timeout or self.timeout

        async def call() -> Any:
            if server.client is None:
                return None
            result = await asyncio.wait_for(server.client.call_tool(tool, arguments), timeout)
            return None if result.is_error else result.structured_content

        try:
            return self._submit(call()).result(timeout + 5)
        except Exception:
            return None

    # -- inside the event loop ----------------------------------------------------------------------
    def _submit(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _connect(self, server: _Server) -> None:
        ready: asyncio.Future[None] = self._loop.create_future()
        server.stop = asyncio.Event()
        server.task = asyncio.ensure_future(self._hold(server, ready, server.stop))
        await ready

    async def _hold(self, server: _Server, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """Keep one connection open until `stop` (the SDK's contexts are entered and left in this task)."""
        from mcp import Client

        try:
            async with Client(self._target(server.config), mode="legacy") as client:
                server.tools = await _list_tools(client, server.name)
                server.client = client
                ready.set_result(None)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(type(exc).__name__))
            if not isinstance(exc, Exception):
                raise
        finally:
            server.client = None

    def _target(self, config: McpServerConfig) -> Any:
        if config.command is not None:
            from mcp.client.stdio import StdioServerParameters

            return StdioServerParameters(
                command=config.command, args=config.args, env=config.env, cwd=self.cwd
            )
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = {}
        if config.bearer_token_env:
            token = self.environ.get(config.bearer_token_env)
            if not token:
                raise McpSetupError(f"the bearer token variable {config.bearer_token_env} is not set")
            headers["Authorization"] = f"Bearer {token}"
        assert config.url is not None
        return streamable_http_client(config.url, http_client=create_mcp_http_client(headers=headers))

    async def _call(
        self, server: _Server, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolResult:
        client = server.client
        if client is None:
            raise _ServerDied("not connected")
        from mcp.shared.exceptions import MCPError

        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments), timeout)
        except (TimeoutError, asyncio.CancelledError):
            raise
        except MCPError as exc:
            if (server.task is not None and server.task.done()) or "closed" in str(exc).lower():
                raise _ServerDied(_reason(exc)) from None
            return ToolResult(f"error: MCP server {server.name}: {_reason(exc)}", True)
        except RuntimeError as exc:  # the SDK's structured-result validation
            return ToolResult(f"error: {_schema_problem(server.name, tool, exc)}", True)
        except Exception as exc:  # a broken transport: the server is gone
            raise _ServerDied(_reason(exc)) from None
        return render_result(result, self.output_cap)

    async def _stop_all(self) -> None:
        for server in self._servers.values():
            await self._stop(server)

    async def _stop(self, server: _Server) -> None:
        if server.stop is not None:
            server.stop.set()
        if server.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(server.task), CLOSE_TIMEOUT_S / 2)
            except BaseException:
                server.task.cancel()

    def _restart(self, server: _Server) -> str | None:
        """Restart a dead server once per run; None when it is back, else why not."""
        if server.restarted:
            return "it stopped twice in this run"
        server.restarted = True
        try:
            self._submit(self._stop(server)).result(CLOSE_TIMEOUT_S)
            self._submit(self._connect(server)).result(CONNECT_TIMEOUT_S)
        except Exception as exc:
            return _reason(exc)
        return None


class _ServerDied(Exception):
    """The connection to a server broke during a call."""


async def _list_tools(client: Any, server: str) -> dict[str, ToolSpec]:
    tools: dict[str, ToolSpec] = {}
    cursor = None
    for _page in range(100):
        listed = await client.list_tools(cursor=cursor)
        for tool in listed.tools:
            tools[tool.name] = tool_spec(server, tool)
        cursor = listed.next_cursor
        if not cursor:
            break
    return tools


def _schema_problem(server: str, tool: str, exc: RuntimeError) -> str:
    text = " ".join(str(exc).split())[:300]
    return (
        f"MCP tool {PREFIX}{server}__{tool} returned a result that does not match its output schema ({text})"
    )


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
