"""Session hooks: memory injected into Claude Code, Codex, Gemini CLI and Qwen Code by ``graymatter hook``.

Every hook is a fresh process reading one JSON payload on stdin; it never fails the client: on any error it
exits 0 with empty output and writes one JSON line to the store's hook log. Only the standard library is
imported here; the engine loads once a store is known to exist.
"""
