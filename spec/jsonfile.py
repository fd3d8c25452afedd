"""Every JSON file kgc reads from outside (scenarios, ITF traces, recorded runs) comes through
here first, so hostile files meet one set of limits and one message style.

Why limits: a 100k-deep array makes Python's json parser raise RecursionError (a traceback, and
the files after it were never run), and a 59 MB scenario took 2 GB and 75 s. Size is checked
before reading; depth is what the parser can take. The message is one line:
`FILE: place: what is wrong`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["InputError", "MAX_INPUT_BYTES", "read_json"]

# Large enough for any real trace or scenario kgc writes (a 50-step ITF trace is ~60 KB; a
# 1,000-step one ~2 MB), small enough to refuse a runaway file (a 59 MB scenario took 2 GB). KGC_MAX_INPUT_MB raises it.
MAX_INPUT_BYTES = int(float(os.environ.get("KGC_MAX_INPUT_MB", "16")) * 1024 * 1024)


class InputError(ValueError):
    """A file kgc cannot use, with where and why: `str()` is the one-line message."""

    def __init__(self, file: str, place: str | None, message: str) -> None:
        super().__init__(message)
        self.file, self.place, self.message = file, place, message

    def __str__(self) -> str:
        return f"{self.file}: {self.place}: {self.message}" if self.place else f"{self.file}: {self.message}"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_json(
    path: str | os.PathLike[str],
    *,
    max_bytes: int | None = None,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    """The parsed JSON document of `path`, or InputError naming the file and what is wrong."""
    file = str(path)
    limit = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    try:
        size = Path(path).stat().st_size
        if not Path(path).is_file():
            raise InputError(file, None, "not a regular file")
        if size > limit:
            raise InputError(
                file,
                None,
                f"too large: {size / 2**20:.1f} MiB over the {limit / 2**20:.0f} MiB limit "
                "(KGC_MAX_INPUT_MB raises it)",
            )
        data = Path(path).read_bytes()
    except OSError as err:
        raise InputError(file, None, f"cannot read: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(file, f"byte {err.start}", "not UTF-8 text") from None
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InputError(file, None, f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    except RecursionError:
        raise InputError(file, None, "JSON nested deeper than kgc reads (about 1,000 levels)") from None
    except ValueError as err:
        raise InputError(file, None, f"invalid JSON: {err}") from None
