"""`kgc kafka start|stop`: a real single-node Kafka 3.9.1 broker (KRaft) from the Maven artifacts
of reference/kafka-broker, for running Kafka's own clients against Kafka itself (the same client
programs the `kgc serve` tests run; docs/kafka-reference.md).

`start` returns once the broker answers and leaves it running in its own process group, its pid
in DIR/broker.pid (with `--foreground` it stays until Ctrl-C or SIGTERM, then stops the broker);
`stop` ends it: SIGTERM, then SIGKILL after a bound. Exit codes: 0 done, 1 usage (a folder it
cannot write, a broker already running there, `stop` where none was started), 23 java missing,
25 the classpath not built, 26 the broker exited or did not answer in time (its log named).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgc.tools.exit_codes import ExitCode

if TYPE_CHECKING:
    from kgc.conformance.reference.kafka_broker import KafkaBroker

__all__ = ["register"]

DEFAULT_DIR = Path("runs/kafka")


def _fail(command: str, message: str, code: ExitCode) -> typer.Exit:
    typer.echo(f"kgc kafka {command}: error: {message}", err=True)
    return typer.Exit(int(code))


def start_command(
    dir: Annotated[Path, typer.Option(help="The broker's folder: config, data, log, pid file.")] = DEFAULT_DIR,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port of the PLAINTEXT listener (0: any free port).")] = 0,
    initial_rebalance_delay_ms: Annotated[int, typer.Option(min=0, help="group.initial.rebalance.delay.ms")] = 0,
    min_session_timeout_ms: Annotated[int, typer.Option(min=1, help="group.min.session.timeout.ms")] = 1000,
    max_session_timeout_ms: Annotated[int, typer.Option(min=1, help="group.max.session.timeout.ms")] = 300000,
    partitions: Annotated[int, typer.Option(min=1, help="num.partitions of auto-created topics.")] = 1,
    auto_create_topics: Annotated[bool, typer.Option(help="auto.create.topics.enable")] = True,
    heap_mb: Annotated[int, typer.Option(min=128, help="The JVM's -Xmx, in MiB.")] = 512,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for the broker to answer.")] = 180,
    foreground: Annotated[bool, typer.Option(help="Stay until Ctrl-C or SIGTERM, then stop the broker.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the broker's address and pid as JSON.")] = False,
) -> None:
    """Start a single-node Kafka broker (KRaft) with the group settings given."""
    import time

    from kgc.conformance.reference.kafka_broker import (
        BrokerRunningError,
        BrokerSettings,
        BrokerStartError,
        JavaMissingError,
        KafkaBroker,
    )
    from kgc.conformance.reference.kafka_coordinator import ReferenceMissingError
    from kgc.tools.outdir import writable_dir

    writable_dir(dir, "--dir", "kafka start")
    settings = BrokerSettings(
        port=port,
        initial_rebalance_delay_ms=initial_rebalance_delay_ms,
        min_session_timeout_ms=min_session_timeout_ms,
        max_session_timeout_ms=max_session_timeout_ms,
        auto_create_topics=auto_create_topics,
        num_partitions=partitions,
        heap_mb=heap_mb,
    )
    broker = KafkaBroker(dir, settings)
    try:
        broker.start(timeout)
        _announce(broker.info(), as_json)
        if foreground:
            while broker.proc is not None and broker.proc.poll() is None:
                time.sleep(0.5)
    except JavaMissingError as e:
        raise _fail("start", str(e), ExitCode.JAVA_MISSING) from None
    except ReferenceMissingError as e:
        raise _fail("start", str(e), ExitCode.REFERENCE_MISSING) from None
    except BrokerRunningError as e:
        raise _fail("start", str(e), ExitCode.USAGE) from None
    except BrokerStartError as e:
        raise _fail("start", str(e), ExitCode.BROKER_FAILED) from None
    except BaseException:  # Ctrl-C or SIGTERM at any point: the broker goes too
        _stop_and_say(broker)
        raise
    if foreground:
        _stop_and_say(broker)
        raise _fail("start", f"{broker.log}: the broker exited on its own", ExitCode.BROKER_FAILED)


def _announce(info: dict[str, object], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(info))
    else:
        typer.echo(
            f"kgc kafka: listening on {info['bootstrap']} (pid {info['pid']}, log {info['log']}, "
            f"started in {info['start_seconds']} s)"
        )


def _stop_and_say(broker: KafkaBroker) -> None:
    stopped = broker.stop()
    if stopped is not None:
        typer.echo(f"kgc kafka: broker {stopped.pid} {stopped.how}")


def stop_command(
    dir: Annotated[Path, typer.Option(help="The folder `kgc kafka start` ran the broker in.")] = DEFAULT_DIR,
    grace: Annotated[float, typer.Option(min=0, help="Seconds between SIGTERM and SIGKILL.")] = 30,
) -> None:
    """Stop the broker started in DIR: SIGTERM (a clean shutdown), SIGKILL after --grace seconds."""
    from kgc.conformance.reference.kafka_broker import PID_FILE, stop_broker

    try:
        stopped = stop_broker(dir, grace)
    except FileNotFoundError:
        raise _fail("stop", f"{dir / PID_FILE}: no broker was started in this folder", ExitCode.USAGE) from None
    except ValueError:
        raise _fail("stop", f"{dir / PID_FILE}: not a pid", ExitCode.USAGE) from None
    typer.echo(f"kgc kafka: broker {stopped.pid} {stopped.how}")


def register(app: typer.Typer) -> None:
    kafka_app = typer.Typer(
        name="kafka", help="A real single-node Kafka 3.9.1 broker (KRaft) for Kafka's clients.", no_args_is_help=True
    )

    @kafka_app.callback()
    def _group() -> None:
        """A real single-node Kafka 3.9.1 broker (KRaft) for Kafka's clients."""

    kafka_app.command("start")(start_command)
    kafka_app.command("stop")(stop_command)
    app.add_typer(kafka_app, name="kafka")
