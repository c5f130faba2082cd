"""Client wiring: ``init`` merges graymatter into each client's config and instruction files; ``doctor``."""
