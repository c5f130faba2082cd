"""Benchmarks for graymatter and tinyagent: ``python -m benchmarks`` runs them all (see README.md here)."""
