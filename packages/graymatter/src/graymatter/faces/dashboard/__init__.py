"""The web dashboard: server-rendered HTML pages over the scoped memory, mounted by the HTTP service."""
