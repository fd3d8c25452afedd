"""`kgc hunt --model M --minutes N`: TLC's simulation mode with every invariant and action
property on, for a time budget, on models too large to check exhaustively (spec/models/hunt.cfg:
4 clients, both JoinGroup flavours, every client fault, 2 failovers).

Why a command of its own: `kgc check` is exhaustive and its timeout is a failure (exit 22); a
hunt is random and its budget running out is the normal end (exit 0: nothing found in that
time). Exit codes: 0 nothing found, 10 a safety property violated (the counterexample as ITF in
the run folder), 1 usage, 20/21 spec or TLC errors, 23/24 Java or the jar missing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.exit_codes import ExitCode, exit_code_for, exit_code_for_setup_error
from kgc.tools.options import JsonOption
from kgc.tools.outdir import writable_dir

__all__ = ["hunt", "register"]

DEFAULT_HUNT_MODEL = "hunt"


def hunt(
    model: Annotated[str, typer.Option("--model", "-m", help="Model name: spec/models/NAME.cfg.")] = DEFAULT_HUNT_MODEL,
    minutes: Annotated[
        float, typer.Option(min=0.01, help="Time budget; when it runs out the hunt ends (exit 0).")
    ] = 5.0,
    depth: Annotated[int, typer.Option(min=2, help="States per random behaviour (TLC -depth).")] = 100,
    seed: Annotated[int, typer.Option(help="TLC's random seed.")] = 0,
    workers: Annotated[int, typer.Option(min=1, help="TLC worker threads.")] = 1,
    json_output: JsonOption = False,
    out: Annotated[
        Path | None, typer.Option(help="Run folder (new or empty); default runs/hunt-<model>-<time>-<pid>/.")
    ] = None,
    spec_dir: Annotated[Path | None, typer.Option(help="Spec folder to use instead of the installed kgc.spec.")] = None,
) -> None:
    """Hunt for a property violation with TLC's random simulation, for a time budget."""
    from rich.console import Console

    from kgc.spec.catalog import ModelNotFoundError, resolve_model
    from kgc.spec.itf import write_itf
    from kgc.spec.tlc import TlcJob, TlcSetupError, make_run_dir, run_tlc
    from kgc.spec.tlc_result import Outcome

    errors = Console(stderr=True, highlight=False)
    try:
        found = resolve_model(model, spec_dir)
    except (ModelNotFoundError, ValueError) as exc:
        typer.echo(f"kgc hunt: error: {exc}", err=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    if out is not None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        typer.echo(f"kgc hunt: error: --out {out} must be a new or empty folder", err=True)
        raise typer.Exit(int(ExitCode.USAGE))
    if out is not None:
        writable_dir(out, "--out", "hunt")
        run_dir = out
    else:
        run_dir = make_run_dir(Path("runs"), f"hunt-{found.name}")
    budget = minutes * 60.0
    job = TlcJob(
        module=found.module,
        config=found.config,
        modules=found.modules,
        workers=workers,
        timeout=budget,
        tlc_options=["-simulate", "-depth", str(depth), "-seed", str(seed)],
        display_paths={p.name: str(p) for p in (found.module, found.config, *found.modules)},
    )
    import time

    started = time.monotonic()
    last = [started]

    def progress(_result: object) -> None:
        now = time.monotonic()
        if now - last[0] >= 10.0:  # a line at most every 10 s (TLC itself reports once a minute)
            last[0] = now
            errors.print(
                f"kgc hunt {found.name}: {(now - started) / 60:.1f} of {minutes:g} min, "
                f"{_states_simulated(run_dir / 'tlc.out'):,} states simulated",
                markup=False,
            )

    try:
        result = run_tlc(job, run_dir, on_update=progress)
    except TlcSetupError as exc:
        typer.echo(f"kgc hunt: error: {exc}", err=True)
        raise typer.Exit(int(exit_code_for_setup_error(exc))) from None
    states = result.states_generated or _states_simulated(run_dir / "tlc.out")
    counterexample: Path | None = None
    if result.trace is not None and result.trace.states:
        counterexample = run_dir / "counterexample.itf.json"
        write_itf(
            counterexample,
            result.trace,
            source=found.module.name,
            description=result.error or "",
            meta={"model": found.name, "violated": result.violated, "hunt_seed": seed},
        )
    # The budget running out is how a hunt ends; anything else is TLC's verdict.
    code = ExitCode.PASSED if result.outcome is Outcome.TIMEOUT else exit_code_for(result.outcome)
    if result.outcome is Outcome.PASSED:
        code = ExitCode.PASSED
    summary = {
        "model": found.name,
        "minutes": minutes,
        "depth": depth,
        "seed": seed,
        "states": states,
        "violated": result.violated,
        "exit_code": int(code),
        "run_folder": str(run_dir),
        "counterexample": str(counterexample) if counterexample else None,
    }
    (run_dir / "result.json").write_text(json.dumps(summary, indent=2) + "\n")
    shown = Console(stderr=json_output, highlight=False)
    if code is ExitCode.PASSED:
        shown.print(
            f"kgc hunt {found.name}: no violation in {minutes:g} min "
            f"({states:,} states simulated, depth {depth}, seed {seed})",
            markup=False,
            soft_wrap=True,
        )
    elif counterexample is not None:
        shown.print(
            f"kgc hunt {found.name}: VIOLATED {result.violated}: counterexample ({len(result.trace.states)} states) "
            f"in {counterexample}; `kgc show {counterexample}` draws it",
            markup=False,
            soft_wrap=True,
        )
    else:
        shown.print(f"kgc hunt {found.name}: error: {result.error_line}", markup=False, soft_wrap=True)
    if json_output:
        print(json.dumps(summary), flush=True)
    raise typer.Exit(int(code))


_PROGRESS = re.compile(r"(\d+) states generated")


def _states_simulated(tlc_out: Path) -> int:
    """The last count TLC's simulation printed (message 2209, once a minute; 0 before)."""
    try:
        text = tlc_out.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    found = _PROGRESS.findall(text)
    return int(found[-1]) if found else 0


def register(app: typer.Typer) -> None:
    app.command("hunt")(hunt)
