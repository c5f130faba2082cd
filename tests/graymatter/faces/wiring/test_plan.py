"""Plans: computed before writing, refused when a file changes between reading and writing."""

from __future__ import annotations

from pathlib import Path

import pytest

from graymatter.errors import InvalidInput
from graymatter.faces.wiring.clients import Homes, client, launch_for
from graymatter.faces.wiring.plan import apply, build, contexts


def test_a_file_changed_after_planning_stops_every_write(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"theme": "Light"}\n')
    homes = Homes.from_env({"HOME": str(home), "PATH": ""})
    selected = contexts(
        [client("gemini"), client("qwen")], "project", homes, project, project / ".gm", launch_for(None)
    )
    plan = build(selected, hooks=False)
    assert {change.path for change in plan.pending} >= {settings, project / "QWEN.md"}
    settings.write_text('{"theme": "Dark"}\n')  # the client saved its settings meanwhile
    with pytest.raises(
        InvalidInput, match=r"settings.json changed while init was running; nothing was changed"
    ):
        apply(plan, stops={project, home})
    assert settings.read_text() == '{"theme": "Dark"}\n'
    assert sorted(p.name for p in project.rglob("*")) == [".gemini", "settings.json"]
