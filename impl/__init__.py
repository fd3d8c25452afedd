"""kgc.impl: the coordinator. The timer, purgatory, delayed operations and group metadata load
compiled when built (kgc.impl.native)."""

import sys as _sys

from kgc.impl.native import native_path as _native_path

_native = _native_path()
if _native is not None:
    __path__.insert(0, _native)
    try:
        # Load them now, so that an extension that cannot load here (another interpreter's
        # build, a missing shared library) falls back to the sources instead of failing later.
        import kgc.impl.delayed  # noqa: F401
        import kgc.impl.group  # noqa: F401
        import kgc.impl.purgatory  # noqa: F401
        import kgc.impl.timer  # noqa: F401
    except ImportError:
        __path__.remove(_native)
        for _name in [
            m
            for m in _sys.modules
            if m.startswith(
                ("kgc.impl.timer", "kgc.impl.purgatory", "kgc.impl.delayed", "kgc.impl.group", "kgc.impl.wheel")
            )
        ]:
            del _sys.modules[_name]
        _native = None
# True when kgc.impl.timer, purgatory, delayed and group are the mypyc-compiled modules.
COMPILED: bool = _native is not None
