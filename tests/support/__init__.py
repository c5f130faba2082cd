"""Shared test support: provider stub servers, PostgreSQL server fixture, subprocess helpers."""
