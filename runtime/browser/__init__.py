"""The worker's browser: the Chromium host, the SDK's toolset, navigation detection, the network guard and egress
proxy, the reaper of orphaned Chromiums, the live view and the trace."""
