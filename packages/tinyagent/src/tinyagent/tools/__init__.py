"""The tools the agent may call (bash, read, write, edit, submit)."""
