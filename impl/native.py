"""Which timer and purgatory run: the mypyc-compiled modules when they are built and current,
else the pure-Python sources beside them.

``python -m kgc.tools.build_native`` (run by scripts/setup.sh) compiles kgc.impl.timer,
kgc.impl.purgatory, kgc.impl.delayed and kgc.impl.group with mypyc into ``impl/_native/`` and writes ``stamp.json`` there with the
sha256 of each source it compiled. ``kgc.impl`` puts that folder first on its ``__path__`` --
so ``import kgc.impl.timer`` loads the extension -- only when:

* ``KGC_PURE`` is not set to a non-empty value other than ``0`` (the tests run both ways), and
* every source still hashes to what the stamp says: an edit to timer.py, purgatory.py,
  delayed.py or group.py after the build makes the compiled copy stale, and a stale copy would silently run old code,
  so the sources win until the next build.

Nothing here imports the compiled modules; the choice is made once, when kgc.impl is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["COMPILED_MODULES", "NATIVE_DIR", "STAMP", "native_path", "pure_requested", "source_digest"]

IMPL_DIR = Path(__file__).resolve().parent
NATIVE_DIR = IMPL_DIR / "_native"
STAMP = "stamp.json"
# The modules compiled, by their file in this folder; the rest of kgc.impl stays Python (the
# coordinator is subclassed and monkeypatched by conformance's seeded bugs). delayed.py's
# operations are made, tried and expired per request, and nothing subclasses them; group.py's
# GroupMetadata and MemberMetadata are read and changed several times per JoinGroup and
# SyncGroup, and what subclasses them is interpreted (allow_interpreted_subclasses). The build
# compiles the purgatory benchmark's operation too (kgc.tools.build_native.BENCH_MODULES).
COMPILED_MODULES = ("timer.py", "purgatory.py", "delayed.py", "group.py")


def pure_requested() -> bool:
    """KGC_PURE=1 (any value but empty or 0) asks for the pure-Python modules."""
    return os.environ.get("KGC_PURE", "") not in ("", "0")


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def native_path() -> str | None:
    """The folder holding current compiled modules, or None: none built, stale, or not wanted."""
    if pure_requested():
        return None
    try:
        stamp = json.loads((NATIVE_DIR / STAMP).read_text())
        sources = stamp["sources"]
        # every module built (kgc.tools.build_native also compiles the benchmark's operation)
        # must still be its source, and the coordinator's modules must be among them
        if not set(COMPILED_MODULES) <= set(sources):
            return None
        for name, digest in sources.items():
            if digest != source_digest(IMPL_DIR / name):
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return str(NATIVE_DIR)
