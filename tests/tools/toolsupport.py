"""Paths and helpers shared by the tests of kgc.tools (imported by name: tests/ is no package).

The fixture specs (one per TLC outcome) and the process helpers live with the tests of
kgc.spec, which runs TLC; they are taken from there rather than copied.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spec"))

from specsupport import KGC, SPEC, processes_mentioning, run_kgc  # noqa: E402

__all__ = ["KGC", "SPEC", "processes_mentioning", "run_kgc"]
