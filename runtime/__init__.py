"""The agent runtime: the turn loop, the Playwright browser driver, the model client, notices and schemas."""
