"""The memory engine: the Memory facade and every business rule (recall, lifecycle, checkpoints, access)."""
