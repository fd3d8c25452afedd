"""`kgc show TRACE [-o FILE.html] [--open]`: a trace as a sequence diagram in one HTML file.

Reads any trace kgc has (a TLC counterexample or simulated trace in ITF, a recorded
implementation run, a scenario file; `--replay` replays an ITF counterexample on the
implementation and shows both side by side) and writes one self-contained page
(kgc.tools.trace_page). Exit 0 written, 1 usage (cannot write the page), 2 the input unusable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.options import BugOption

__all__ = ["register", "show"]

EXIT_INVALID = 2


def default_page_path(trace: Path) -> Path:
    """Next to the trace: `x.itf.json` -> `x.html`."""
    name = trace.name
    for suffix in (".itf.json", ".json"):
        if name.endswith(suffix):
            return trace.with_name(name[: -len(suffix)] + ".html")
    return trace.with_name(name + ".html")


def open_in_browser(path: Path) -> None:
    import webbrowser

    webbrowser.open(path.resolve().as_uri())


def show(
    trace: Annotated[
        Path, typer.Argument(help="ITF trace (kgc check / simulate), recorded run (kgc validate --out), or scenario.")
    ],
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="Page to write (default: next to TRACE, .html).")
    ] = None,
    replay: Annotated[
        bool, typer.Option("--replay", help="Replay the counterexample on the implementation; show both sides.")
    ] = False,
    bug: BugOption = None,
    open_page: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
) -> None:
    """Draw a trace as a sequence diagram (one self-contained HTML page)."""
    from kgc.spec.jsonfile import InputError
    from kgc.tools.exit_codes import ExitCode
    from kgc.tools.trace_page import page_from_file, write_page

    try:
        page = page_from_file(trace, replay=replay, bug=bug)
    except InputError as err:
        typer.echo(f"kgc show: error: {err}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    except Exception as err:  # noqa: BLE001 - any unusable input is one error line
        typer.echo(f"kgc show: error: {trace}: {type(err).__name__}: {err}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    target = out or default_page_path(trace)
    try:
        write_page(target, page)
    except OSError as err:
        typer.echo(f"kgc show: error: {target}: cannot write the page: {err.strerror or err}", err=True)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    typer.echo(f"page: {target}")
    if open_page:
        open_in_browser(target)


def register(app: typer.Typer) -> None:
    app.command("show")(show)
