"""The parser a command line gets: one command's parser is the full parser's, for every command
(packages/graymatter/src/graymatter/faces/cli/parser.py)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from graymatter.errors import CliUsageError
from graymatter.faces.cli.parser import COMMANDS, build_parser, parse_arguments


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _shape(parser: argparse.ArgumentParser) -> list[tuple[object, ...]]:
    """Every option and positional of ``parser`` and of its nested commands, as plain data."""
    rows: list[tuple[object, ...]] = []
    for action in parser._actions:
        rows.append(
            (
                type(action).__name__,
                tuple(action.option_strings),
                action.dest,
                str(action.default),
                action.nargs,
                action.required,
                action.help,
                str(action.choices and list(action.choices)),
            )
        )
        if isinstance(action, argparse._SubParsersAction):
            rows.extend((name, *_shape(sub)) for name, sub in action.choices.items())
    return rows


def test_the_command_table_names_every_command_in_help_order() -> None:
    assert list(_commands(build_parser())) == list(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_one_commands_parser_is_the_full_parsers(command: str) -> None:
    alone = _commands(build_parser(command))
    assert list(alone) == [command]
    assert _shape(alone[command]) == _shape(_commands(build_parser())[command])


@pytest.mark.parametrize(
    "argv",
    [
        ["recall", "bot", "deploys", "--top-k", "3", "--all"],
        ["--dir", "gm", "remember", "bot", "Deploys happen on Tuesdays", "--session", "s1"],
        ["checkpoint", "save", "bot", "--state", "{}", "--json"],
        ["mcp", "serve", "--dir", "gm"],
        ["token", "create", "--agents", "*", "--read-only"],
        ["hook", "claude-code", "session-start"],
        ["export", "--format", "json", "--out", "-"],
    ],
)
def test_a_command_line_parses_as_the_full_parser_parses_it(argv: list[str]) -> None:
    narrowed = vars(parse_arguments(argv))
    full = vars(build_parser().parse_args([a for a in argv if a not in ("--dir", "gm", "--json")]))
    assert narrowed.keys() >= full.keys()
    assert {k: narrowed[k] for k in full if k not in ("dir", "json")} == {
        k: v for k, v in full.items() if k not in ("dir", "json")
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["recal", "bot", "q"], "unknown command 'recal' (did you mean 'recall'?)"),
        (["recall", "bot"], "the following arguments are required: query"),
        (["checkpoint", "sav", "bot"], "unknown command 'sav' (did you mean 'save'?)"),
    ],
)
def test_usage_errors_are_those_of_the_full_parser(argv: list[str], message: str) -> None:
    with pytest.raises(CliUsageError) as narrowed:
        parse_arguments(argv)
    assert message in str(narrowed.value)


def test_a_recall_command_line_imports_no_other_commands_module() -> None:
    probe = (
        "import sys, graymatter.faces.cli.parser as p; p.parse_arguments(['recall', 'bot', 'q']); "
        "print(__import__('json').dumps(sorted(m for m in sys.modules if m.startswith('graymatter.faces.'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    others = {module for name, module in COMMANDS.items() if module != COMMANDS["recall"]}
    assert not loaded & others, loaded & others
