"""Local servers that speak the Anthropic Messages wire format: a test stub base and the scripted demo model."""
