"""Obsidian exports never merge two agents into one folder, and agent ids cannot break the metadata
(issue 16, defect 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter.engine.export import _yaml, folder_names, write_obsidian
from graymatter.engine.memory import Memory
from graymatter.errors import InvalidInput


def _front_matter(note: Path) -> dict[str, object]:
    text = note.read_text(encoding="utf-8")
    head = text.split("---\n")[1]
    loaded = yaml.safe_load(head)
    assert isinstance(loaded, dict)
    return loaded


def test_agents_whose_names_sanitise_alike_get_their_own_folders(mem: Memory, tmp_path: Path) -> None:
    agents = ["team/alpha", "team-alpha", "team alpha", "Team-Alpha", "line\nbreak"]
    for agent in agents:
        mem.remember(agent, f"the fact of {agent}")
    out = tmp_path / "vault"
    write_obsidian(mem.export(), out)
    indexes = sorted(out.glob("*/_index.md"))
    assert len(indexes) == len(agents)  # one folder and one index per agent, none overwritten
    assert len({p.parent.name.lower() for p in indexes}) == len(agents)  # case-insensitive filesystems too
    seen = {}
    for index in indexes:
        notes = [p for p in index.parent.glob("*.md") if p.name != "_index.md"]
        assert len(notes) == 1
        meta = _front_matter(notes[0])
        seen[meta["agent_id"]] = notes[0].read_text(encoding="utf-8")
    assert sorted(seen) == sorted(agents)  # the exact ids, newline included, read back from the YAML
    for agent, note in seen.items():
        assert f"the fact of {agent}" in note


def test_a_safe_agent_id_keeps_its_plain_folder_name() -> None:
    assert folder_names(["ops", "team-alpha"]) == {"ops": "ops", "team-alpha": "team-alpha"}


@settings(deadline=None, max_examples=200)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=8, unique=True))
def test_folder_names_are_distinct_for_any_ids(agents: list[str]) -> None:
    names = folder_names(agents)
    assert sorted(names) == sorted(agents)
    assert len({n.lower() for n in names.values()}) == len(agents)
    assert all("/" not in n and n not in ("", ".", "..") for n in names.values())


@settings(deadline=None, max_examples=300)
@given(st.text())
def test_yaml_scalars_round_trip_any_text(value: str) -> None:
    scalar = _yaml(value)
    assert "\n" not in scalar and "\r" not in scalar
    assert yaml.safe_load(f"agent_id: {scalar}") == {"agent_id": value} or not _yaml_representable(value)


def _yaml_representable(value: str) -> bool:
    """PyYAML refuses some code points outright (lone surrogates, most C1 controls) in any form."""
    try:
        yaml.safe_load(json.dumps(value))
    except yaml.YAMLError:
        return False
    return True


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("field", ["state", "metadata"])
def test_an_import_refuses_a_checkpoint_json_cannot_hold_and_writes_nothing(
    mem: Memory, tmp_path: Path, value: str, field: str
) -> None:
    """Python's JSON reader accepts NaN and Infinity; stored, such a state could never be resumed (the
    store checks the JSON it hands out), so the whole import is refused before anything is written."""
    mem.remember("a", "a fact that travels with the bundle")
    mem.checkpoint_save("a", {"step": 1})
    bundle = json.loads(mem.export().model_dump_json())
    bundle["checkpoints"][0][field] = {"x": "__bad__"}
    text = json.dumps(bundle).replace('"__bad__"', value)
    with Memory(tmp_path / "fresh", embedder=None, summariser=None) as fresh:
        with pytest.raises(InvalidInput, match=rf"^checkpoint {bundle['checkpoints'][0]['id']}: {field} "):
            fresh.import_bundle(text)
        assert fresh.list("a") == []
        assert fresh.checkpoint_list("a") == []
