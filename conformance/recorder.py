"""Recorded implementation runs: the trace format (TODO driver below)."""
