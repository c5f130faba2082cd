"""--resume: validate an unfinished run's checkpoint and continue it."""
