"""The MCP server: seven tools over stdio and streamable HTTP, on the official SDK."""
