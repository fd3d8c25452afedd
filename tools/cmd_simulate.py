"""`kgc simulate --model NAME --traces N --depth D --seed S --out DIR`: random behaviours of a
model of the spec, drawn by TLC, written as ITF JSON for `kgc conform`.

One TLC worker, so a seed always gives the same traces. Exit 0 when the traces were written;
10 when the model violated a property while simulating (the trace is
DIR/counterexample.itf.json); 1 for bad options; 20/21/22 as `kgc check` for spec errors, TLC
failures and timeouts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.exit_codes import ExitCode, exit_code_for, exit_code_for_setup_error
from kgc.tools.options import DEFAULT_MODEL, ModelOption
from kgc.tools.outdir import writable_dir

__all__ = ["register", "simulate_command"]


def simulate_command(
    model: ModelOption = DEFAULT_MODEL,
    traces: Annotated[int, typer.Option(min=1, help="How many behaviours to draw.")] = 100,
    depth: Annotated[int, typer.Option(min=1, help="States per behaviour (at most).")] = 40,
    seed: Annotated[int, typer.Option(help="TLC's random seed: same seed, same traces.")] = 0,
    out: Annotated[Path, typer.Option(help="Folder for trace-NNNNN.itf.json (new or empty).")] = Path("traces"),
    ms_per_unit: Annotated[
        int, typer.Option(min=1, help="Milliseconds per spec time unit (recorded for conform).")
    ] = 1000,
    timeout: Annotated[float | None, typer.Option(min=0.001, help="Seconds before TLC is killed.")] = None,
    spec_dir: Annotated[Path | None, typer.Option(help="Spec folder instead of the installed kgc.spec.")] = None,
) -> None:
    """Draw random behaviours of a model with TLC and write them as ITF traces."""
    from kgc.conformance.mbt import simulate
    from kgc.spec.catalog import ModelNotFoundError
    from kgc.spec.tlc import TlcSetupError

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        typer.echo(f"kgc simulate: error: --out {out} must be a new or empty folder", err=True)
        raise typer.Exit(int(ExitCode.USAGE))
    writable_dir(out, "--out", "simulate")
    from kgc.tools.progress import ticking

    try:
        with ticking("kgc simulate") as status:
            status(f"TLC drawing {traces} behaviours of {model}, depth {depth}")
            result = simulate(
                model, traces, depth, seed, out, ms_per_unit=ms_per_unit, timeout=timeout, spec_dir=spec_dir
            )
    except (ModelNotFoundError, ValueError) as e:
        typer.echo(f"kgc simulate: error: {e}", err=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    except OSError as e:  # the --out folder filled up or went away while traces were written
        written = len(list(out.glob("trace-*.itf.json"))) if out.is_dir() else 0
        typer.echo(f"kgc simulate: error: writing to {out}: {e.strerror or e} ({written} traces written)", err=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    except TlcSetupError as e:
        typer.echo(f"kgc simulate: error: {e}", err=True)
        raise typer.Exit(int(exit_code_for_setup_error(e))) from None
    total = result.tlc_seconds + result.convert_seconds
    rate = len(result.files) / total if total > 0 else 0.0
    typer.echo(
        f"kgc simulate {result.model}: {len(result.files)} traces, {result.states} states "
        f"(depth {depth}, seed {seed}) in {out}"
    )
    typer.echo(
        f"  TLC {result.tlc_seconds:.1f} s, conversion to ITF {result.convert_seconds:.1f} s ({rate:,.0f} traces/s)"
    )
    if result.counterexample is not None:
        typer.echo(f"  the model violates {result.check.violated}: {result.counterexample}")
        raise typer.Exit(int(ExitCode.SAFETY_VIOLATED))
    if not result.ok:
        typer.echo(f"kgc simulate: error: {result.check.error_line}", err=True)
        raise typer.Exit(int(exit_code_for(result.check.outcome)))


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_command)
