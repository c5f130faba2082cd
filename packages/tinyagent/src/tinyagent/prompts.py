"""The system prompt, AGENTS.md loading and the fixed texts the loop sends to the model.

Decision: AGENTS.md instructions are placed *inside the system prompt* (one clearly delimited section),
never as a separate message, so they appear exactly once per conversation and are covered by the
same digest (`instructions_sha256`) that `--resume` compares. The effective system prompt is a pure
function of (canonical cwd, AGENTS.md mode, AGENTS.md bytes, configured extra instructions); it contains
no dates, hostnames or environment values, so rebuilding it later gives the same bytes.

Modes: `auto` loads `AGENTS.md` from the working directory when it exists (UTF-8, at most
`MAX_AGENTS_MD_BYTES`); `off` never loads it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Literal

from tinyagent.errors import UsageError

AgentsMdMode = Literal["auto", "off"]
AGENTS_MD_MODES: tuple[str, ...] = ("auto", "off")
AGENTS_MD_NAME = "AGENTS.md"
MAX_AGENTS_MD_BYTES = 64 * 1024
MAX_FORMAT_ERRORS = 3

BASE_SYSTEM_PROMPT = """\
You are tinyagent, a careful noninteractive coding agent. You work alone on one task in the \
working directory {cwd} and nobody will answer questions: decide, act, verify.

Use the tools to inspect and change files and to run commands:
- bash: run a command in a fresh shell in the working directory (state such as `cd` does not persist).
- read_file / write_file / edit_file: read, create or precisely edit text files (paths are relative \
to the working directory).
- submit: when the task is done and verified, call submit with a short final answer for the user.

Every reply must call at least one tool. Tool calls in one reply run in order. Prefer small, \
verifiable steps, check the results of your commands, and do not stop before calling submit."""

AGENTS_MD_SECTION = """

The project provides the following instructions in {name}. Follow them unless they conflict with the task.
<agents-md>
{text}
</agents-md>"""

EXTRA_INSTRUCTIONS_SECTION = """

Additional instructions from the tinyagent configuration:
{text}"""

FORMAT_ERROR_NUDGE = (
    "Your last reply did not call any tool. Every reply must call at least one tool: continue the "
    "task with bash, read_file, write_file or edit_file, or call submit with your final answer when "
    "the task is done."
)

SUMMARY_INSTRUCTIONS = (
    "You compact the earlier part of a coding agent's session so it can continue within its context "
    "window. Write a faithful, dense summary of the turns given (folding in the summary so far, if any): "
    "what was done, what was learned about the code, files created or changed, commands that matter and "
    "their outcome, decisions, open problems and the next steps. Keep exact names, paths and values; no "
    "preamble. Reply with the summary text only and call no tool."
)
"""The system prompt of a compaction request."""

SUMMARY_HEADER = "[tinyagent: earlier turns of this run were compacted; their summary follows.]"
"""Starts the summary appended to the task message in a compacted model view."""

PENDING_CALL_RESULT = (
    "error: interrupted, outcome unknown, not re-run: the run was killed after this tool call was "
    "requested and before its result was saved. It may have run partly, fully or not at all; inspect "
    "the workspace before relying on its effects."
)
"""The result `--resume-pending=mark-interrupted` records for each call of a pending tool batch."""

CONTINUATION_NOTICE = (
    "[tinyagent: this run was resumed from a saved checkpoint.] The conversation above is restored "
    "from the last saved turn; no earlier tool call will be run again. The workspace may have changed "
    "since that checkpoint: files may have been edited by people or by commands whose effects were not "
    "recorded (anything after the last save is unrecorded). Re-inspect the current state of the files "
    "you rely on before acting, then continue the original task and call submit when it is done."
)


class PromptError(UsageError, ValueError):
    """The instructions could not be loaded (for example an unreadable or oversized AGENTS.md)."""


def load_agents_md(cwd: str | os.PathLike[str], mode: str) -> str | None:
    """Return the text of `<cwd>/AGENTS.md` in mode `auto` (None if absent), always None in mode `off`."""
    if mode not in AGENTS_MD_MODES:
        raise PromptError(f"invalid AGENTS.md mode {mode!r}; use one of: {', '.join(AGENTS_MD_MODES)}")
    if mode == "off":
        return None
    path = Path(cwd) / AGENTS_MD_NAME
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_AGENTS_MD_BYTES + 1)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise PromptError(f"{path} is a directory, not an instructions file") from exc
    except OSError as exc:
        raise PromptError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_AGENTS_MD_BYTES:
        raise PromptError(
            f"{path} is larger than {MAX_AGENTS_MD_BYTES} bytes; shorten it or run with --agents-md off"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(f"{path} is not UTF-8 text (byte offset {exc.start})") from exc


def build_system_prompt(
    cwd: str | os.PathLike[str], agents_md: str, extra_instructions: str | None = None
) -> str:
    """The effective system prompt for a run in `cwd` (already canonical) with the given AGENTS.md mode."""
    text = BASE_SYSTEM_PROMPT.format(cwd=os.fspath(cwd))
    agents_text = load_agents_md(cwd, agents_md)
    if agents_text is not None and agents_text.strip():
        text += AGENTS_MD_SECTION.format(name=AGENTS_MD_NAME, text=agents_text.strip("\n"))
    if extra_instructions and extra_instructions.strip():
        text += EXTRA_INSTRUCTIONS_SECTION.format(text=extra_instructions.strip("\n"))
    return text


def instructions_sha256(system_prompt: str) -> str:
    """Digest of the effective instructions (the full system prompt, UTF-8)."""
    return hashlib.sha256(system_prompt.encode("utf-8")).hexdigest()
