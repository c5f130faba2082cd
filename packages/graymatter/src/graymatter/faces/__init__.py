"""The faces: CLI, MCP server and HTTP service. Each knows the engine, not the other faces."""
