"""tinyagent: a small, scriptable, noninteractive coding agent with resumable trajectories."""

__version__ = "0.2.0"

__all__ = ["__version__"]
