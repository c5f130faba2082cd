"""The HTTP client the wire adapters share (stdlib http.client, retries, proxies, SSE streaming)."""
