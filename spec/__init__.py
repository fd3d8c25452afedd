"""The TLA+ specification, shipped as package data (no Python lives here)."""
