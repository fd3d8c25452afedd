"""`kgc serve`: a one-broker Kafka wire-protocol server whose group coordinator is kgc.impl's,
so Kafka's own consumers (kafka-python, aiokafka, confluent-kafka) form groups against it.

Prints `kgc serve: listening on HOST:PORT` once it accepts connections (`--port 0` picks a free
port). Runs until SIGINT or SIGTERM; then, with `--record DIR`, writes each group's run as a
scenario (DIR/scenarios) and as a recorded trace (DIR/traces) for `kgc validate`. With
`--store PATH` group metadata is appended to a crash-safe file (kgc.impl.durable_store) and a
restarted server loads every group from it. Exit 0 after a clean stop, 1 for bad usage (a port
in use, a folder it cannot write).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.exit_codes import ExitCode

__all__ = ["register", "serve_command"]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")] = 9092,
    partitions: Annotated[int, typer.Option(min=1, max=10000, help="Partitions of each auto-created topic.")] = 3,
    record: Annotated[
        Path | None, typer.Option(help="Write each group's run here on stop (scenarios/ and traces/).")
    ] = None,
    store: Annotated[
        Path | None, typer.Option(help="Durable group store file; groups in it are loaded on start.")
    ] = None,
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
    initial_rebalance_delay_ms: Annotated[int, typer.Option(min=0, help="group.initial.rebalance.delay.ms")] = 3000,
    min_session_timeout_ms: Annotated[int, typer.Option(min=1, help="group.min.session.timeout.ms")] = 6000,
    max_session_timeout_ms: Annotated[int, typer.Option(min=1, help="group.max.session.timeout.ms")] = 1800000,
    time_unit_ms: Annotated[
        int, typer.Option(min=1, max=1000, help="The coordinator's clock moves in steps of this many ms.")
    ] = 100,
) -> None:
    """Serve the Kafka protocol for consumer groups, with kgc's coordinator."""
    import asyncio
    import logging
    import signal
    import sys

    from kgc.impl.coordinator import GroupConfig
    from kgc.tools.outdir import writable_dir
    from kgc.tools.serve.server import ServeConfig, Server

    level = log_level.upper()
    if level not in LOG_LEVELS:
        typer.echo(f"kgc serve: error: --log-level {log_level}: one of {', '.join(LOG_LEVELS)}", err=True)
        raise typer.Exit(int(ExitCode.USAGE))
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if record is not None:
        writable_dir(record, "--record", "serve")
        handlers.append(logging.FileHandler(record / "server.log"))
    if store is not None:
        writable_dir(store.parent if str(store.parent) else Path("."), "--store", "serve")
    fmt = logging.Formatter("[%(asctime)s] %(levelname)s %(message)s")
    logger = logging.getLogger("kgc")
    logger.setLevel(level)
    for h in handlers:
        h.setFormatter(fmt)
        logger.addHandler(h)
    logger.propagate = False

    config = ServeConfig(
        host=host,
        port=port,
        partitions=partitions,
        record=record,
        store=store,
        group=GroupConfig(
            min_session_timeout_ms=min_session_timeout_ms,
            max_session_timeout_ms=max_session_timeout_ms,
            initial_rebalance_delay_ms=initial_rebalance_delay_ms,
        ),
        time_unit_ms=time_unit_ms,
    )

    async def run() -> None:
        server = Server(config)
        try:
            await server.start()
        except OSError as err:
            typer.echo(f"kgc serve: error: cannot listen on {host}:{port}: {err.strerror or err}", err=True)
            raise typer.Exit(int(ExitCode.USAGE)) from None
        typer.echo(f"kgc serve: listening on {host}:{server.port}")
        sys.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await server.stop()
        typer.echo(
            f"kgc serve: stopped after {server.broker.requests if server.broker else 0} requests"
            + (f"; recorded {len(server.recorder.groups())} group(s) in {record}" if server.recorder else "")
        )

    asyncio.run(run())


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
