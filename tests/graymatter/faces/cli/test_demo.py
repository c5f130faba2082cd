"""``graymatter demo`` tells its five-step story, offline, and docs/demo.txt is what it prints."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

Cli = Callable[..., Any]

DEMO_TXT = Path(__file__).resolve().parents[4] / "docs" / "demo.txt"
PATH_HINT = (
    "(graymatter is not on your PATH yet: run 'source .venv/bin/activate', or see README.md for pipx / uv)"
)
"""What ``make demo`` adds after the story when the commands are not on PATH."""
_VARYING = [  # what legitimately differs between two runs
    (re.compile(r"/\S*graymatter-demo-[\w-]+"), "<store>"),
    (re.compile(r"Done in \d+\.\d+ s"), "Done in <t> s"),
    (re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b"), "<id>"),
]


def normalise(text: str) -> str:
    """``text`` with store paths, timings and ids replaced by placeholders."""
    for pattern, placeholder in _VARYING:
        text = pattern.sub(placeholder, text)
    return text


def test_demo_tells_the_story_and_cleans_up(cli: Cli) -> None:
    result = cli("demo", use_dir=False)
    assert result.code == 0, result.stderr
    titles = re.findall(r"^(\d)\. (.+)$", result.stdout, re.M)
    assert [t for _, t in titles] == [
        "Remember",
        "Recall: ask in your own words",
        "Teach vocabulary",
        "Revise: facts change",
        "Checkpoint: stop now, resume later",
    ]
    assert "relevance " in result.stdout and "identical state" in result.stdout
    store = re.search(r"temporary store \((\S+)\)", result.stdout)
    assert store and not Path(store.group(1)).exists()


def test_demo_json_is_one_document_with_every_step(cli: Cli) -> None:
    result = cli("demo", "--json", use_dir=False)
    assert result.code == 0 and result.stderr == ""
    story = json.loads(result.stdout)
    assert story["roundtrip"] is True and [s["step"] for s in story["steps"]] == [1, 2, 3, 4, 5]
    revise = story["steps"][3]["questions"][0]["answers"][0]
    assert revise["text"] == "Deploys happen every Wednesday after 15:00 UTC (changed in Q3)"
    assert 0 < revise["relevance"] <= 1
    assert story["steps"][4]["state"] == {
        "ticket": "ACME-1042",
        "step": 3,
        "notes": ["asked for logs", "waiting on customer"],
    }


def test_committed_demo_output_matches_what_the_command_prints(cli: Cli) -> None:
    committed = DEMO_TXT.read_text("utf-8")
    assert committed.startswith("==> creating .venv"), (
        "docs/demo.txt is the output of `make demo` on a fresh clone"
    )
    printed = cli("demo", use_dir=False)
    assert printed.code == 0
    demo_part = normalise(committed[committed.index("graymatter demo: ") :])
    story = normalise(printed.stdout)
    after = demo_part[len(story) :] if demo_part.startswith(story) else None
    assert after is not None and after.strip() in ("", PATH_HINT), (
        "docs/demo.txt is stale: regenerate it from a fresh clone's `make demo`"
    )
