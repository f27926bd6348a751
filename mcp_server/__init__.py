"""The MCP server: a workspace's runs as tools for Claude Code, Claude Desktop and any MCP client, at /mcp."""
