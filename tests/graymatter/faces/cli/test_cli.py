"""The ``graymatter`` command line, run as real subprocesses."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graymatter import Memory
from graymatter.config import MemoryConfig
from support.env import hermetic_env

Cli = Callable[..., Any]


def test_remember_recall_json_round_trip(cli: Cli) -> None:
    stored = cli("--json", "remember", "agent", "The deploy target is eu-west-1")
    assert stored.code == 0, stored.stderr
    fact = stored.json()
    assert fact["agent_id"] == "agent" and fact["provenance"]["interface"] == "cli"
    recalled = cli("recall", "agent", "where is the deploy target?", "--json")
    assert recalled.code == 0
    hits = recalled.json()
    assert [h["id"] for h in hits] == [fact["id"]]
    assert set(hits[0]) >= {"id", "text", "score"}


def test_human_output_and_explain(cli: Cli) -> None:
    cli("remember", "agent", "Alice owns billing")
    cli("remember", "agent", "Bob owns search")
    out = cli("recall", "agent", "who owns billing", "--explain")
    assert out.code == 0
    lines = out.stdout.splitlines()
    assert lines[0] == '# Memory context [agent agent] / "who owns billing"'
    assert lines[1] == "1. Alice owns billing"
    assert "ranks: keyword 1" in lines[2] and "(k=60)" in lines[2]
    explained = cli("--json", "recall", "agent", "who owns billing", "--explain").json()
    ranks = explained[0]["ranks"]
    weights = explained[0]["weights"]
    recomputed = sum(
        w / (ranks["k"] + r)
        for w, r in (
            (weights["keyword"], ranks["keyword_rank"]),
            (weights["vector"], ranks["vector_rank"]),
            (weights["recency"], ranks["recency_rank"]),
        )
        if r
    )
    assert abs(recomputed - ranks["fused_score"]) < 1e-12


def test_shared_and_all_scopes(cli: Cli) -> None:
    assert cli("remember", "--shared", "shared caching policy").code == 0
    assert cli("remember", "agent", "agent caching note").code == 0
    shared = cli("--json", "recall", "agent", "caching", "--shared").json()
    assert [h["agent_id"] for h in shared] == ["__shared__"]
    both = cli("--json", "recall", "agent", "caching", "--all").json()
    assert {h["agent_id"] for h in both} == {"agent", "__shared__"}
    conflict = cli("recall", "agent", "caching", "--shared", "--all")
    assert conflict.code == 2


def test_revise_forget_pin_unpin_alias_link_list(cli: Cli) -> None:
    cli("remember", "a", "port is 8080")
    revised = cli("--json", "revise", "a", "port is 8080", "port is 9090").json()
    assert revised["fact"]["text"] == "port is 9090" and len(revised["superseded_ids"]) == 1
    pinned = cli("--json", "pin", "a", "port is 9090").json()
    assert pinned["action"] == "pin" and len(pinned["fact_ids"]) == 1
    assert cli("--json", "unpin", "a", "port is 9090").json()["fact_ids"] == pinned["fact_ids"]
    alias = cli("--json", "alias", "a", "k8s", "kubernetes", "kube").json()
    assert alias["kind"] == "alias" and alias["equivalents"] == ["kubernetes", "kube"]
    assert [x["text"] for x in cli("--json", "alias", "a", "--list").json()] == ["k8s"]
    link = cli("--json", "link", "a", "Alice", "Billing").json()
    assert (link["source"], link["target"]) == ("alice", "billing")
    forgotten = cli("--json", "forget", "a", "port is 9090").json()
    assert len(forgotten["fact_ids"]) == 1
    listing = cli("--json", "list", "a").json()
    assert [f["superseded_by"] is not None for f in listing] == [True, True]
    assert cli("--json", "list", "a", "--live").json() == []
    assert "superseded by" in cli("list", "a").stdout


def test_checkpoint_save_list_resume(cli: Cli, tmp_path: Path) -> None:
    first = cli("--json", "checkpoint", "save", "a", "--state", '{"step": 1}').json()
    state_file = tmp_path / "state.json"
    state_file.write_text('{"step": 2, "files": ["a.py"]}')
    second = cli(
        "--json", "checkpoint", "save", "a", "--state", f"@{state_file}", "--metadata", '{"run": "x"}'
    ).json()
    assert second["metadata"] == {"source": "cli", "run": "x"}
    piped = cli("--json", "checkpoint", "save", "b", "--state", "-", stdin='{"from": "stdin"}').json()
    assert piped["state"] == {"from": "stdin"}
    latest = cli("--json", "checkpoint", "resume", "a").json()
    assert latest["id"] == second["id"] and latest["state"] == {"step": 2, "files": ["a.py"]}
    by_id = cli("checkpoint", "resume", "a", first["id"])
    assert by_id.code == 0 and json.loads(by_id.stdout)["state"] == {"step": 1}
    listing = cli("checkpoint", "list", "a")
    assert listing.stdout.splitlines()[0].split() == ["ID", "CREATED", "MESSAGES"]
    assert listing.stdout.splitlines()[1].startswith(second["id"])
    assert [c["id"] for c in cli("--json", "checkpoint", "list", "a").json()] == [second["id"], first["id"]]
    assert cli("--json", "checkpoint", "save", "c").json()["state"] == {}


def test_stats_agents_consolidate(cli: Cli, gm_dir: Path) -> None:
    with Memory(gm_dir, config=MemoryConfig(), embedder=None) as memory:
        memory.remember_many("a", [f"fact {i}" for i in range(3)])
    stats = cli("--json", "stats").json()
    assert stats["embedding"] == "keyword-only"
    assert [(s["agent_id"], s["fact_count"]) for s in stats["agents"]] == [("a", 3)]
    assert cli("--json", "agents").json() == ["a"]
    report = cli("--json", "consolidate", "a").json()
    assert report["agent_id"] == "a" and report["pruned"] == []
    assert "3 live facts" in cli("stats", "a").stdout


def test_export_formats_and_json_import_round_trip(cli: Cli, tmp_path: Path, gm_dir: Path) -> None:
    cli("remember", "a", "fact one")
    cli("remember", "a", "old value")
    cli("revise", "a", "old value", "new value")
    cli("alias", "a", "db", "database")
    cli("link", "a", "x", "y")
    cli("checkpoint", "save", "a", "--state", '{"k": 1}')
    out = tmp_path / "export.json"
    result = cli("--json", "export", "--format", "json", "--out", str(out))
    assert result.code == 0 and result.json()["facts"] == 4
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    bundle = json.loads(out.read_text())
    assert (
        bundle["format"] == "graymatter-export"
        and len(bundle["checkpoints"]) == 1
        and len(bundle["links"]) == 1
    )
    markdown = cli("export", "--out", "-").stdout
    assert "~~old value~~" in markdown and "**db** = database" in markdown and "x —agent_link→ y" in markdown
    default = cli("export")
    assert default.code == 0 and (gm_dir / "export" / "graymatter.md").is_file()
    vault = tmp_path / "vault"
    assert cli("export", "--format", "obsidian", "--out", str(vault)).code == 0
    notes = sorted(p.name for p in (vault / "a").iterdir())
    assert "_index.md" in notes and len(notes) == 5

    other = tmp_path / "other"
    imported = cli("--dir", str(other), "--json", "import", str(out), use_dir=False).json()
    assert (
        imported["facts_added"] == 4 and imported["checkpoints_added"] == 1 and imported["links_added"] == 1
    )
    again = cli("--dir", str(other), "--json", "import", str(out), use_dir=False).json()
    assert again["facts_added"] == 0 and again["facts_skipped"] == 4
    out2 = tmp_path / "export2.json"
    cli("--dir", str(other), "export", "--format", "json", "--out", str(out2), use_dir=False)
    reexported = json.loads(out2.read_text())
    for key in ("facts", "checkpoints", "links"):
        assert reexported[key] == bundle[key]
    recalled = cli("--dir", str(other), "--json", "recall", "a", "database value", use_dir=False).json()
    assert "new value" in [h["text"] for h in recalled] and "old value" not in [h["text"] for h in recalled]


def test_recall_order_is_identical_across_processes(cli: Cli, gm_dir: Path) -> None:
    with Memory(gm_dir, config=MemoryConfig(), embedder=None) as memory:
        memory.remember_many("a", [f"service {i % 5} owner note {i} with shared words" for i in range(40)])
    runs = [
        cli("--json", "recall", "a", "service owner shared words", "--top-k", "15").json() for _ in range(3)
    ]
    orders = [[(h["id"], h["score"]) for h in run] for run in runs]
    assert orders[0] == orders[1] == orders[2]
    assert len(orders[0]) == 15


def test_global_flags_anywhere_env_dir_and_store_url(cli: Cli, gm_dir: Path, tmp_path: Path) -> None:
    assert cli("remember", "a", "placed flags", "--dir", str(gm_dir), "--json", use_dir=False).json()["text"]
    env = hermetic_env(GRAYMATTER_DIR=str(gm_dir))
    via_env = cli("--json", "recall", "a", "placed flags", use_dir=False, env=env).json()
    assert [h["text"] for h in via_env] == ["placed flags"]
    via_url = cli(
        "--store", f"sqlite://{gm_dir}", "--json", "--no-daemon", "recall", "a", "flags", use_dir=False
    )
    assert [h["text"] for h in via_url.json()] == ["placed flags"]
    env = hermetic_env(GRAYMATTER_DATABASE_URL=f"sqlite://{gm_dir}")
    assert cli("--json", "agents", use_dir=False, env=env).json() == ["a"]
    bad = cli("--store", "mysql://nope", "agents", use_dir=False)
    assert bad.code == 2 and "unsupported store URL scheme" in bad.stderr
    assert cli("--version").stdout.startswith("graymatter ")


def test_default_dir_is_dot_graymatter_with_private_modes(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "graymatter", "remember", "a", "x"],
        cwd=tmp_path,
        env=hermetic_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    store = tmp_path / ".graymatter"
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert stat.S_IMODE((store / "graymatter.db").stat().st_mode) == 0o600


def test_quiet_and_stdin_text(cli: Cli) -> None:
    quiet = cli("--quiet", "remember", "a", "-", stdin="from stdin\n")
    assert quiet.code == 0 and quiet.stdout == ""
    assert cli("--json", "list", "a").json()[0]["text"] == "from stdin\n"


def test_extension_subcommands_are_registered(cli: Cli) -> None:
    help_text = cli("--help").stdout
    for command in ("remember", "recall", "checkpoint", "export", "import", "demo"):
        assert command in help_text
    if "mcp" in help_text:
        assert cli("mcp", "--help").code == 0


def test_cli_import_stays_light() -> None:
    code = (
        "import sys, graymatter.faces.cli.main, graymatter.faces.cli.parser\n"
        "parser = graymatter.faces.cli.parser.build_parser()\n"
        "names = ('numpy', 'httpx', 'mcp', 'uvicorn', 'starlette', 'psycopg')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=hermetic_env(), timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_recall_order_with_vectors_is_identical_across_processes(cli: Cli, gm_dir: Path) -> None:
    env = hermetic_env(GRAYMATTER_EMBEDDINGS="hashing")
    texts = [f"deploy note {i}: service {i % 4} rolls out on day {i % 6}" for i in range(30)]
    with Memory(gm_dir, config=MemoryConfig(embedding="hashing")) as memory:
        memory.remember_many("a", texts)
        assert memory.embedding_model == "hashing-v1-256/256"
    query = ("--json", "recall", "a", "deploy note service", "--explain")
    runs = [cli(*query, env=env).json() for _ in range(2)]
    assert [(h["id"], h["score"]) for h in runs[0]] == [(h["id"], h["score"]) for h in runs[1]]
    assert any(h["ranks"]["vector_rank"] > 0 for h in runs[0])
    assert cli("--json", "stats", env=env).json()["embedding"] == "hashing-v1-256/256"


def test_export_to_a_directory_and_unwritable_targets(cli: Cli, tmp_path: Path) -> None:
    cli("remember", "a", "exported fact")
    target = tmp_path / "out"
    target.mkdir()
    assert cli("export", "--format", "json", "--out", str(target)).code == 0
    assert json.loads((target / "graymatter.json").read_text())["facts"][0]["text"] == "exported fact"
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    result = cli("export", "--out", str(blocked / "x.md"))
    assert result.code == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr and str(blocked) in result.stderr and "--out" in result.stderr
