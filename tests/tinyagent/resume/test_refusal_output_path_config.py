"""The ``output path`` and ``configuration`` resume refusals of docs/resume.md (issue 16, gap 9), and the
forged-cwd hint (defect 8), through the real CLI: exit 2, one line naming the category, nothing sent,
nothing written, the checkpoint untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.resume_checkpoints import cli_env
from support.resume_workspace import Workspace, load, refused, rewrite


def test_an_output_path_that_cannot_be_inspected_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    (ws.root / "plain-file").write_text("not a directory")
    result = ws.resume(checkpoint, "plain-file/out.json")
    line = refused(ws, result, "output path", checkpoint, data, "plain-file/out.json")
    assert "cannot inspect -o plain-file/out.json" in line and "choose another path" in line


def test_an_output_name_too_long_to_inspect_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    name = "o" * 300 + ".json"
    line = refused(ws, ws.resume(checkpoint, name), "output path", checkpoint, data, "placeholder.json")
    assert "choose another path" in line


@pytest.mark.parametrize(
    ("files", "variables"),
    [
        ({"tinyagent/config.yaml": "step_limit: [unclosed\n"}, {}),
        ({"tinyagent/config.yaml": "step_limit: many\n"}, {}),
        ({}, {"TINYAGENT_STEP_LIMIT": "many"}),
    ],
    ids=["broken-yaml", "bad-value-in-file", "bad-value-in-environment"],
)
def test_an_invalid_configuration_is_refused(
    ws: Workspace, checkpoint: Path, files: dict[str, str], variables: dict[str, str]
) -> None:
    data = checkpoint.read_bytes()
    for relative, text in files.items():
        path = ws.root / "xdg-config" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    result = ws.resume(checkpoint, "out.json", env=cli_env(ws.root, **variables))
    line = refused(ws, result, "configuration", checkpoint, data, "out.json")
    assert line.endswith("; fix the configuration and retry (nothing was sent)")


@pytest.mark.parametrize("forged", ["/", "/etc", "HOME"])
def test_a_forged_cwd_is_never_suggested(ws: Workspace, checkpoint: Path, forged: str) -> None:
    document = load(checkpoint)
    document["resume"]["cwd"] = str(ws.root / "home") if forged == "HOME" else forged
    (ws.root / "home").mkdir(exist_ok=True)
    rewrite(checkpoint, document)
    data = checkpoint.read_bytes()
    result = ws.resume(checkpoint, "out.json")
    line = refused(ws, result, "cwd mismatch", checkpoint, data, "out.json")
    assert "rerun with --cwd" not in line
    assert "is not a project directory: check where this checkpoint came from" in line


def test_a_real_project_cwd_is_still_suggested(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    other = ws.root / "other"
    other.mkdir()
    result = ws.run("--resume", checkpoint, "--cwd", other, "-o", "out.json")
    line = refused(ws, result, "cwd mismatch", checkpoint, data, "out.json")
    assert line.endswith(f"rerun with --cwd {ws.project.resolve()}")
