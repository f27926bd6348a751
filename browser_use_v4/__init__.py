"""The Browser Use Cloud v4 API at /api/v4: an adapter over the services the v1 API calls (docs/browser-use-compat.md)."""
