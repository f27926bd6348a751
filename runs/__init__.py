"""Sessions, runs and their events; the agent runtime that executes runs; the live viewer."""
