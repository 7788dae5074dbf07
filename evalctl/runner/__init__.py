"""Executes cases: conversation turns, the tool spy, timeouts, retries, and result assembly."""
