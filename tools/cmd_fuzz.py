"""`kgc fuzz [--examples N]`: the Hypothesis state machine (conformance/stateful.py) against the
coordinator, checking after every step every spec property, the timed liveness properties
(conformance/timed_liveness.py) and that the coordinator recorded no internal error or
duplicate answer (conformance/faults.py).

Shows the examples run as they go. A property violation is written as a scenario file (in
--save, default ./kgc-fuzz) that `kgc replay` runs, and the first failing example's number and
the seconds to it (before shrinking) are printed: time-to-find, which `kgc bench fuzz` measures
per seeded bug with `--seed` and `--no-shrink`. Exit 0 when no example broke a property, 10
when one did, 21 when the coordinator or the driver raised, 1 for bad usage.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgc.tools.exit_codes import ExitCode
from kgc.tools.options import BugOption, JsonOption
from kgc.tools.outdir import writable_dir

if TYPE_CHECKING:
    from kgc.conformance.stateful import FuzzResult

__all__ = ["fuzz_command", "register"]

EXIT_PASS = int(ExitCode.PASSED)
EXIT_VIOLATED = int(ExitCode.SAFETY_VIOLATED)
EXIT_ERROR = int(ExitCode.TLC_ERROR)
EXIT_USAGE = int(ExitCode.USAGE)


def fuzz_command(
    examples: Annotated[int | None, typer.Option(min=1, help="Examples to try (default: the profile's).")] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="Steps per example (default: the profile's).")] = None,
    profile: Annotated[str, typer.Option(help="Hypothesis profile: ci (quick, derandomized) or deep.")] = "deep",
    bug: BugOption = None,
    save: Annotated[Path, typer.Option(help="Folder for the scenario file of a failing example.")] = Path("kgc-fuzz"),
    seed: Annotated[
        int | None, typer.Option(min=0, help="Hypothesis seed: one fixed sequence of examples (random by default).")
    ] = None,
    shrink: Annotated[
        bool, typer.Option(help="Shrink a failing example before saving it (--no-shrink: stop at the first).")
    ] = True,
    json_output: JsonOption = False,
) -> None:
    """Hypothesis stateful testing: consumers, time, failovers and stray requests against the
    coordinator; every spec property checked after every step."""
    from kgc.conformance.seeded_bugs import coordinator_class
    from kgc.conformance.stateful import fuzz

    if profile not in ("ci", "deep"):
        typer.echo(f"kgc fuzz: error: unknown profile {profile!r} (ci, deep)", err=True)
        raise typer.Exit(EXIT_USAGE)
    try:
        cls = coordinator_class(bug)
    except KeyError as e:
        typer.echo(f"kgc fuzz: error: {e.args[0]}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    writable_dir(save, "--save", "fuzz", create=False)

    tty = sys.stdout.isatty()
    started = time.monotonic()
    last = [0.0]

    def progress(n: int) -> None:
        now = time.monotonic()
        if tty:
            if now - last[0] > 0.2:
                last[0] = now
                typer.echo(f"\rexamples: {n} ({now - started:.0f} s)", nl=False)
        elif n % 100 == 0:
            typer.echo(f"examples: {n} ({now - started:.0f} s)")

    result = fuzz(
        cls,
        profile=profile,
        examples=examples,
        steps=steps,
        save_dir=save,
        on_example=progress,
        seed=seed,
        shrink=shrink,
    )
    if tty:
        typer.echo("")
    took = time.monotonic() - started
    failures = 0 if result.ok else 1
    head = (
        f"kgc fuzz ({cls.__name__}, profile {profile}): {result.examples} sequences, {result.steps} steps, "
        f"{failures} failures in {took:.1f} s"
    )
    code = EXIT_PASS
    if result.violation is not None:
        v = result.violation
        typer.echo(f"{head}: PROPERTY VIOLATED {v}")
        if result.found is not None:
            f = result.found
            typer.echo(f"first failure: example {f.examples}, {f.seconds:.1f} s ({f.cpu_seconds:.1f} s CPU)")
        if v.scenario is not None:
            again = f"kgc replay --bug {bug} {v.scenario}" if bug and bug != "none" else f"kgc replay {v.scenario}"
            typer.echo(f"scenario: {v.scenario} ({again})")
        code = EXIT_VIOLATED
    elif result.error is not None:
        typer.echo(f"{head}: ERROR {type(result.error).__name__}: {result.error}")
        code = EXIT_ERROR
    else:
        typer.echo(f"{head}: no property violated")
    if json_output:
        typer.echo(json.dumps(_as_json(result, bug, seed, took)))
    raise typer.Exit(code)


def _as_json(result: FuzzResult, bug: str | None, seed: int | None, seconds: float) -> dict[str, object]:
    """The run as `kgc bench fuzz` reads it: what failed and how soon (before shrinking)."""
    found = result.found
    violation = result.violation
    return {
        "bug": bug or "none",
        "seed": seed,
        "examples": result.examples,
        "steps": result.steps,
        "seconds": round(seconds, 3),
        "violated": sorted(violation.report.violations) if violation is not None else None,
        "scenario": str(violation.scenario) if violation is not None and violation.scenario else None,
        "error": f"{type(result.error).__name__}: {result.error}" if result.error is not None else None,
        "first_failure": None
        if found is None
        else {
            "examples": found.examples,
            "seconds": round(found.seconds, 3),
            "cpu_seconds": round(found.cpu_seconds, 3),
        },
    }


def register(app: typer.Typer) -> None:
    app.command("fuzz")(fuzz_command)
