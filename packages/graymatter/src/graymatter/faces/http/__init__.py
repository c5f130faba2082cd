"""The HTTP service: REST, security middleware, and the one application factory."""
