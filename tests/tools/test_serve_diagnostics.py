"""A consumer that stalls leaves enough in a timed-out wait's message to tell where it stopped:
its threads' stacks (serve_clients/diagnostics.py, asked for by wait_for with SIGUSR1) beside its
client library's log, and the coordinator's lines."""

from __future__ import annotations

import signal
import socket

import pytest
from serve_support import consumer, wait_for


def test_a_stalled_consumer_shows_its_stacks() -> None:
    with socket.socket() as silent:  # accepts connections, never answers: the client waits in bootstrap
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        proc = consumer("kafka_python", silent.getsockname()[1], "g-stalled", "t-stalled", "stalled-0", 3000)
        try:
            with pytest.raises(AssertionError) as failed:
                wait_for("an assignment that cannot come", lambda: False, 4, [proc], lambda: "the coordinator's lines")
            message = str(failed.value)
            assert "timed out after 4 s waiting for an assignment that cannot come" in message
            assert "(most recent call first)" in message, message  # faulthandler's dump of the threads
            assert "kafka_python_consumer.py" in message, message  # the main thread's frames, by file
            assert message.endswith("--- the coordinator:\nthe coordinator's lines")
            assert proc.proc.poll() is None, "SIGUSR1 must not end the consumer"
        finally:
            proc.signal(signal.SIGKILL)  # SIGTERM waits for its bootstrap to time out
            proc.proc.wait(10)
