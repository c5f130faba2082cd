"""Recall: query tokenisation and term selection, candidate signals, and reciprocal-rank fusion."""
