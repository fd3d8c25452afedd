"""The TLA+ specification (package data) and the Python that runs TLC on it and reads its values.

Knows nothing of kgc.impl or kgc.conformance: it is the bottom layer on the TLA+ side."""
