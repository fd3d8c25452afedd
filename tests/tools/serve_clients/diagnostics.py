"""What a consumer script leaves for a test that times out waiting for it (serve_support.wait_for):
the client library's warnings and group steps on stderr, and every thread's stack on SIGUSR1, so
a stalled client shows where it stopped."""

from __future__ import annotations

import faulthandler
import logging
import signal
import sys


def diagnosable(group_logger: str | None = None) -> None:
    """Python clients log through `logging` (kafka-python's package logger has only a
    NullHandler, so nothing shows by default): warnings from every logger, INFO from
    `group_logger` (the library's group coordinator: joins, syncs, heartbeat failures)."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    if group_logger is not None:
        logging.getLogger(group_logger).setLevel(logging.INFO)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
