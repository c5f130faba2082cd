"""The graymatter command line."""
