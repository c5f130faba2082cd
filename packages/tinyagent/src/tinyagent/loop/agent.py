"""The agent loop: query the model, run the tool batch, save, repeat, until an ending.

Semantics (aligned with mini-swe-agent, see docs/trajectory.md):

- A *step* is one model request. `totals.steps` is incremented when a request is started, so a
  request that fails or is interrupted still counts (as in mini).
- Before every request the cumulative ceilings are checked: `0 < step_limit <= steps` -> StepLimit,
  `0 < cost_limit <= cost` -> CostLimit, `0 < time_limit <= elapsed` -> TimeLimit. An exhausted
  ceiling makes no request; the last request may overshoot the cost ceiling.
- The wall-time limit covers this invocation only. It is checked before each request and also aborts
  a request in flight (SIGALRM); a running tool is bounded by the tool timeout instead.
- The tool calls of one reply run in order; each gets exactly one tool message. After `submit`, after a
  harness failure (ToolError) or after an interruption, the remaining calls of the batch are not run and
  get an error result saying so.
- A reply without any tool call is a format error: a fixed nudge (a user message) is appended and the
  loop continues; the third consecutive one ends the run with RepeatedFormatError.
- Saves: the initial state before the first request, after every completed turn (tool batch or
  nudge) with status Running, and at termination; and, synchronously, after a reply with tool calls
  and before its tools run: one fdatasynced record in the run's pending journal
  (`trajectory/journal.py`), or without one a full save marked `resume.tool_batch_pending` (a kill during
  the batch leaves a reply that `--resume` refuses unless `--resume-pending=mark-interrupted`). Every
  trajectory file ends at a model-query boundary or at such a pending reply. In fresh mode a
  checkpoint (a snapshot taken at the boundary) is written by one long-lived worker thread while the
  next request is built, sent and answered; it is always finished before the next tool batch, before
  the next save and before the run returns. In resume mode (`stop_on_save_failure`) every save is
  synchronous.
- SIGINT/SIGTERM: a request in flight is abandoned, a running command's process group is killed, the
  batch is completed with "interrupted" results, and the run ends with Interrupted after saving.
- Save failures: reported on stderr; the run continues (fresh mode) and the process exits nonzero, or
  with `stop_on_save_failure` (resume mode) the run stops at once with SaveError, making no further
  request and running no further tool.

The saves themselves are `saving.Saver`'s job and the signal handlers' installation `signals.py`'s.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeAlias

from tinyagent.keys import redact
from tinyagent.loop.accounting import PriceFn, account, default_price
from tinyagent.loop.compaction import Compactor
from tinyagent.loop.saving import SaveFn, Saver
from tinyagent.loop.signals import Abort, stop_and_alarm_handlers
from tinyagent.output import Reporter
from tinyagent.prompts import FORMAT_ERROR_NUDGE, MAX_FORMAT_ERRORS
from tinyagent.providers.base import Provider, ProviderError
from tinyagent.tools.text import clean_json_value, clean_text
from tinyagent.tools.toolbox import Toolbox, ToolInfrastructureError, ToolResult
from tinyagent.trajectory.models import ExitStatus, Trajectory
from tinyagent.types import Completion, Message, ToolCall, Usage

Ending: TypeAlias = tuple[ExitStatus, str | None]
"""How a run ended: its exit status and a detail line."""

_IDLE, _QUERY, _TOOLS = "idle", "query", "tools"


def _valid_utf8(message: Message) -> Message:
    """The reply with every string encodable as UTF-8, so the trajectory can always be saved."""
    try:
        message.model_dump_json()
        return message
    except ValueError:  # PydanticSerializationError is a ValueError
        data = clean_json_value(message.model_dump())
        return Message.model_validate(data)


def utc_now() -> str:
    """The current time as RFC 3339 UTC with millisecond precision."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Agent:
    """Runs one trajectory to an ending. Reusable building block for fresh runs and `--resume`.

    `save` is called with the trajectory at every checkpoint; it raises on failure. `price`
    returns the USD cost of a step or None when the model's price is unknown.
    """

    def __init__(
        self,
        provider: Provider,
        toolbox: Toolbox,
        *,
        stream: bool = True,
        save: SaveFn | None = None,
        reporter: Reporter | None = None,
        stop_on_save_failure: bool = False,
        price: PriceFn | None = None,
        handle_signals: bool = True,
        overlap_saves: bool = True,
        clock: Callable[[], float] = time.monotonic,
        window: int | None = None,
    ) -> None:
        self.provider = provider
        self.toolbox = toolbox
        self.stream = stream
        self.reporter = reporter or Reporter(quiet=True)
        self.price = price or default_price(getattr(provider, "name", ""))
        self.handle_signals = handle_signals
        self.clock = clock
        self._compactor = Compactor(provider, window, stream=stream)  # window None: never compacts
        self._saver = Saver(save, self.reporter, overlap=overlap_saves, stop_on_failure=stop_on_save_failure)
        self._saver.overlap_sync = overlap_saves  # the toolbox waits for the reply's sync (effects_gate)
        self._phase = _IDLE
        self._stop: tuple[ExitStatus, str] | None = None
        self._time_up = False
        self._started = 0.0

    @property
    def saves(self) -> int:
        """How many saves were started (checkpoints included)."""
        return self._saver.saves

    @property
    def save_failed(self) -> bool:
        """True once any save failed (the process then exits nonzero)."""
        return self._saver.failed

    # -- public ---------------------------------------------------------------------------------
    def run(self, trajectory: Trajectory) -> Trajectory:
        """Continue `trajectory` (fresh: system + task; resumed: restored history) until it ends.

        The trajectory is updated in place and returned with its exit status, detail, submission,
        totals and timing set. `trajectory.limits` holds the ceilings to enforce.
        """
        self._started = self.clock()
        trajectory.exit_status = ExitStatus.RUNNING
        trajectory.exit_detail = None
        trajectory.submission = None
        handlers = stop_and_alarm_handlers(
            self._on_stop_signal, self._on_alarm, trajectory.limits.time_limit, enabled=self.handle_signals
        )
        with handlers, self._saver.running():
            if self._checkpoint(trajectory):
                try:
                    status, detail = self._loop(trajectory)
                except Abort as abort:  # defensive: an abort can only come from a request in flight
                    status, detail = abort.status, abort.detail
            else:
                status, detail = ExitStatus.SAVE_ERROR, "the initial save failed"
            self._phase = _IDLE
            trajectory.exit_status = status
            trajectory.exit_detail = clean_text(detail) if detail is not None else None
            self._stamp(trajectory, final=True)
            self._saver.save_final(trajectory)
        return trajectory

    def request_stop(self, status: ExitStatus = ExitStatus.INTERRUPTED, detail: str = "interrupted") -> None:
        """Ask the loop to stop (thread- and signal-safe): kills a running command, abandons nothing else."""
        if self._stop is None:
            self._stop = (status, detail)
        self.toolbox.interrupt()

    # -- loop -------------------------------------------------------------------------------------
    def _loop(self, traj: Trajectory) -> Ending:
        format_errors = 0
        while True:
            if self._stop is not None:
                return self._stop
            exhausted = self._exhausted(traj)
            if exhausted is not None:
                return exhausted
            ending = self._maybe_compact(traj)
            if ending is not None:
                return ending
            step = traj.totals.steps + 1
            self.reporter.step_started(step, traj.limits.step_limit)
            completion = self._request(traj, step)
            if not isinstance(completion, Completion):
                return completion
            reply = self._record_reply(traj, step, completion)
            if not reply.tool_calls:
                format_errors += 1
                ending = self._nudge(traj, step, format_errors)
                if ending is not None:
                    return ending
                continue
            format_errors = 0
            # the reply (and, by the journal or a wait, the turns before it) is durable before tools run
            if not self._save_pending_turn(traj, reply.tool_calls):
                return ExitStatus.SAVE_ERROR, "the save before a tool batch failed"
            durable = self._saver.durability_gate(traj)  # a tool waits for it before its first effect
            self.toolbox.effects_gate = durable
            try:
                ending = self._run_batch(traj, step, reply.tool_calls)
            finally:
                self.toolbox.effects_gate = None
            if not durable():
                return ExitStatus.SAVE_ERROR, "the save before a tool batch failed"
            self._mark_pending(traj, False)
            if ending is not None:
                return ending
            if not self._checkpoint(traj):
                return ExitStatus.SAVE_ERROR, "a checkpoint save failed"

    def _request(self, traj: Trajectory, step: int) -> Completion | Ending:
        """One model request (step `step`), or the ending it ran into."""
        try:
            try:
                self._phase = _QUERY
                if self._stop is not None:  # a signal arrived just before the request
                    raise Abort(*self._stop)
                traj.totals.steps = step  # counted once the request is about to be sent
                view = self._compactor.view(traj)
                completion = self.provider.complete(view, traj.tools, stream=self.stream)
                self._compactor.measured(completion.usage, len(view))
                return completion
            finally:
                # From here on no signal handler raises, so the handlers below see every exception
                # (an abort that races with a provider error replaces it and is caught below).
                self._phase = _IDLE
        except Abort as abort:
            return abort.status, abort.detail
        except ProviderError as exc:
            return ExitStatus.PROVIDER_ERROR, f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a provider bug must still end the run cleanly and saved
            return ExitStatus.PROVIDER_ERROR, f"unexpected provider failure ({type(exc).__name__})"

    def _maybe_compact(self, traj: Trajectory) -> Ending | None:
        """Compact the model view when the next prompt nears the window; the ending it ran into, if any."""
        if not self._compactor.due(traj):
            return None
        self._saver.finish_pending()
        try:
            try:
                self._phase = _QUERY
                if self._stop is not None:
                    raise Abort(*self._stop)
                usage = self._compactor.compact(traj)
            finally:
                self._phase = _IDLE
        except Abort as abort:
            return abort.status, abort.detail
        except Exception as exc:  # the run goes on with the full context, and compaction stays off
            self._compactor.window = None
            self.reporter.warning(f"compaction failed ({type(exc).__name__}); continuing without it")
            return None
        self._account(traj, usage)
        assert traj.resume is not None and traj.resume.compaction is not None
        self.reporter.progress(
            f"compacted the context: messages before {traj.resume.compaction.through} summarised "
            f"(compaction {traj.resume.compaction.count})"
        )
        if not self._checkpoint(traj):
            return ExitStatus.SAVE_ERROR, "a checkpoint save failed"
        return None

    def _record_reply(self, traj: Trajectory, step: int, completion: Completion) -> Message:
        """Account the step's usage and append its reply (always an assistant message) to the history."""
        self._account(traj, completion.usage)
        reply = _valid_utf8(completion.message)
        usage = completion.usage
        self.reporter.progress(
            f"step {step}: reply with {len(reply.tool_calls)} tool call(s); tokens: input "
            f"{usage.input_tokens:,}, output {usage.output_tokens:,}, "
            f"cache read {usage.cache_read_tokens:,}"
        )
        if reply.role != "assistant":
            reply = reply.model_copy(update={"role": "assistant"})
        traj.messages.append(reply)
        return reply

    def _nudge(self, traj: Trajectory, step: int, format_errors: int) -> Ending | None:
        """After a reply without a tool call: the fixed nudge, then a checkpoint, or the ending."""
        traj.messages.append(Message(role="user", content=FORMAT_ERROR_NUDGE))
        self.reporter.progress(f"step {step}: reply had no tool call ({format_errors}/{MAX_FORMAT_ERRORS})")
        if format_errors >= MAX_FORMAT_ERRORS:
            return (
                ExitStatus.REPEATED_FORMAT_ERROR,
                f"{MAX_FORMAT_ERRORS} consecutive replies without a tool call",
            )
        if not self._checkpoint(traj):
            return ExitStatus.SAVE_ERROR, "a checkpoint save failed"
        return None

    def _run_batch(self, traj: Trajectory, step: int, calls: list[ToolCall]) -> Ending | None:
        submission: str | None = None
        failure: tuple[ExitStatus, str] | None = None
        for call in calls:
            skip = None
            if submission is not None:
                skip = "error: not executed: an earlier submit in this reply ended the run"
            elif failure is not None:
                skip = "error: not executed: an earlier tool call failed in the harness"
            elif self._stop is not None:
                skip = "error: not executed: the run was interrupted"
            if skip is not None:
                result = ToolResult(skip, is_error=True)
            else:
                self.reporter.tool_call(step, call)
                self._phase = _TOOLS
                try:
                    result = self.toolbox.run(call)
                except ToolInfrastructureError as exc:
                    result = ToolResult(f"error: {exc}", is_error=True)
                    failure = (ExitStatus.TOOL_ERROR, str(exc))
                except Exception as exc:
                    result = ToolResult(f"error: internal tool failure ({type(exc).__name__})", is_error=True)
                    failure = (
                        ExitStatus.TOOL_ERROR,
                        f"internal failure in tool {call.name} ({type(exc).__name__})",
                    )
                finally:
                    self._phase = _IDLE
                self.reporter.tool_result(step, call.name, result.is_error)
                if result.submission is not None:
                    submission = result.submission
            traj.messages.append(
                Message(
                    role="tool",
                    content=redact(result.content),  # no known key reaches the trajectory or the model
                    tool_call_id=call.id,
                    name=call.name,
                    is_error=result.is_error,
                )
            )
        if submission is not None:
            traj.submission = submission
            return ExitStatus.SUBMITTED, None
        if failure is not None:
            return failure
        if self._stop is not None:
            return self._stop
        return None

    # -- accounting and limits ------------------------------------------------------------------
    def _account(self, traj: Trajectory, usage: Usage) -> None:
        account(traj, usage, self.price, self.reporter)

    def _elapsed(self) -> float:
        return max(0.0, self.clock() - self._started)

    def _exhausted(self, traj: Trajectory) -> tuple[ExitStatus, str] | None:
        limits, totals = traj.limits, traj.totals
        if 0 < limits.step_limit <= totals.steps:
            return ExitStatus.STEP_LIMIT, f"step limit {limits.step_limit} reached ({totals.steps} steps)"
        if 0 < limits.cost_limit <= totals.cost_usd:
            return (
                ExitStatus.COST_LIMIT,
                f"cost limit ${limits.cost_limit:g} reached (${totals.cost_usd:.4f} spent)",
            )
        if self._time_up or 0 < limits.time_limit <= self._elapsed():
            return ExitStatus.TIME_LIMIT, f"time limit {limits.time_limit:g} s reached"
        return None

    # -- persistence ----------------------------------------------------------------------------
    def _stamp(self, traj: Trajectory, *, final: bool = False) -> None:
        traj.timing.elapsed_seconds = round(self._elapsed(), 3)
        if final:
            traj.timing.ended_at = utc_now()

    def _save_pending_turn(self, traj: Trajectory, calls: list[ToolCall]) -> bool:
        """Save the reply, marked pending, before its tools run (a batch of only `submit` needs none).

        A hard kill while the tools run then leaves a file that says which calls may have had effects;
        `--resume` refuses it unless told to record them as interrupted. False: stop (resume mode only).
        """
        if all(call.name == "submit" for call in calls):
            return True
        self._mark_pending(traj, True)
        self._stamp(traj)
        return self._saver.save_pending(traj) or not self._saver.stop_on_failure

    @staticmethod
    def _mark_pending(traj: Trajectory, pending: bool) -> None:
        if traj.resume is not None and traj.resume.tool_batch_pending is not pending:
            traj.resume = traj.resume.model_copy(update={"tool_batch_pending": pending})

    def _checkpoint(self, traj: Trajectory) -> bool:
        """Stamp and save a Running checkpoint; False means the run must stop (resume mode only)."""
        self._stamp(traj)
        return self._saver.checkpoint(traj)

    # -- signals ----------------------------------------------------------------------------------
    def _on_stop_signal(self, signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        self.request_stop(ExitStatus.INTERRUPTED, f"interrupted by {name}")
        if self._phase == _QUERY:
            self._phase = _IDLE
            raise Abort(ExitStatus.INTERRUPTED, f"interrupted by {name}")

    def _on_alarm(self, _signum: int, _frame: object) -> None:
        self._time_up = True
        if self._phase == _QUERY:
            self._phase = _IDLE
            raise Abort(ExitStatus.TIME_LIMIT, "time limit reached during a model request")
