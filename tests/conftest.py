"""Root pytest configuration. Suite-specific fixtures live in each subdirectory's conftest.py."""
