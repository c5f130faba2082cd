"""graymatter: persistent memory and checkpoints for AI agents."""

__version__ = "0.1.0"
