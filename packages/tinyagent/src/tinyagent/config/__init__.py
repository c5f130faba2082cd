"""Run settings: the config files and the resolution of flags, environment, config files and defaults."""
