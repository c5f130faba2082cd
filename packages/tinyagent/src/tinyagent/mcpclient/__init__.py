"""The MCP client of tinyagent: the run's MCP servers on the official SDK, and memory over graymatter."""
