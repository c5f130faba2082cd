"""The figures published in benchmarks/README.md are exactly the committed result files."""

from __future__ import annotations

import pytest
from benchmarks.harness import BENCH_ROOT
from benchmarks.report import (
    BEGIN,
    END,
    README,
    ROOT_README,
    SECTION_BEGIN,
    SECTION_END,
    render_one,
    render_section,
    render_targets,
    splice,
)

GM_BENCH = (
    "recall_latency",
    "cold_recall",
    "write_throughput",
    "token_reduction",
    "synthetic_quality",
    "locomo",
)


@pytest.mark.parametrize("name", GM_BENCH)
def test_published_tables_match_the_result_file(name: str) -> None:
    section = render_one(name, BENCH_ROOT / "results")
    assert section is not None, f"benchmarks/results/{name}.json is not committed"
    document = README.read_text(encoding="utf-8")
    generated = document.split(BEGIN, 1)[1].split(END, 1)[0]
    assert section in generated, (
        f"run `python -m benchmarks.report`: the {name} tables in README.md are stale"
    )


def test_splice_replaces_only_the_generated_block() -> None:
    document = f"intro\n{BEGIN}\nold\n{END}\noutro\n"
    assert splice(document, "new\n") == f"intro\n{BEGIN}\n\nnew\n\n{END}\noutro\n"
    with pytest.raises(ValueError):
        splice("no markers", "x")


def test_targets_table_and_readme_section_are_current() -> None:
    results = BENCH_ROOT / "results"
    generated = README.read_text(encoding="utf-8").split(BEGIN, 1)[1].split(END, 1)[0]
    assert render_targets(results) in generated
    section = ROOT_README.read_text(encoding="utf-8").split(SECTION_BEGIN, 1)[1].split(SECTION_END, 1)[0]
    assert section == "\n" + render_section(results), "run `python -m benchmarks.report`"
