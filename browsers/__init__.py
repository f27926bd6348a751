"""Browser sessions: a raw Chromium a client's own agent drives over CDP, behind the egress guard (docs/browsers.md)."""
