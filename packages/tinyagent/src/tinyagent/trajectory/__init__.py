"""The trajectory: the versioned record of a run, and its atomic private files."""
