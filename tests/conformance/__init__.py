"""The official MCP conformance suite against graymatter's HTTP faces (part of the release gate)."""
