"""`kgc all`: the main job -- every stage of the harness on the default model, then a report.

Each stage is another kgc subcommand run as a subprocess with `--json` (or its line protocol):
the stages stay exactly what a user runs by hand, one failing stage cannot corrupt another's
state, and the JVM/Spark start-ups each stage needs are its own business. The summary table and
`report.html` are written to one run folder; the exit code is the worst stage's (0 when all
passed).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from kgc.conformance.scenario import shipped_scenarios
from kgc.tools.options import DEFAULT_MODEL, JunitOption, ModelOption
from kgc.tools.outdir import writable_dir

__all__ = ["Stage", "StageResult", "register", "run_all"]


@dataclass
class StageResult:
    """What one stage did: its verdict, a one-line headline, and its JSON summary (if any)."""

    name: str
    argv: list[str]
    exit_code: int
    seconds: float
    headline: str
    summary: dict[str, Any] = field(default_factory=dict)
    output_tail: str = ""

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


@dataclass(frozen=True)
class Stage:
    """A stage: how to build its command line and how to read its output into a headline."""

    name: str
    argv: Callable[[Path], list[str]]
    headline: Callable[[str, dict[str, Any]], str]
    json_last_line: bool = True
    before: Callable[[Path], list[str]] | None = None  # a preparing command (e.g. simulate)
    junit: bool = False  # the command takes --junit FILE; its file is merged into the run's junit.xml


def _last_json(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def _scenario_files(root: Path) -> list[str]:
    return sorted(str(p) for p in shipped_scenarios().glob("*.json"))


def _replay_headline(stdout: str, _: dict[str, Any]) -> str:
    lines = [ln for ln in stdout.splitlines() if ln.split(" ", 1)[0] in {"PASS", "FAIL", "ERROR"}]
    passed = sum(ln.startswith("PASS") for ln in lines)
    bad = [ln for ln in lines if not ln.startswith("PASS")]
    return f"{passed}/{len(lines)} scenarios passed" + (f"; first problem: {bad[0]}" if bad else "")


def _check_headline(_: str, s: dict[str, Any]) -> str:
    if not s:
        return "no summary"
    text = f"{s.get('result')}: {s.get('distinct_states')} distinct states, depth {s.get('depth')}, "
    text += f"{s.get('wall_seconds', 0):.1f} s, {s.get('states_per_second', 0):,.0f} states/s"
    if s.get("violated"):
        text += f"; violated {s['violated']}"
    return text


def _prove_headline(_: str, s: dict[str, Any]) -> str:
    if not s:
        return "no summary"
    checks = s.get("checks", [])
    proved = sum(1 for c in checks if c.get("status") == "proved") if checks else None
    total = len(checks) if checks else None
    core = f"{proved}/{total} checks proved" if total else ("all proved" if s.get("ok") else "not proved")
    return f"{core} in {s.get('total_ms', 0):.0f} ms"


def _generic_headline(stdout: str, s: dict[str, Any]) -> str:
    if s.get("headline"):
        return str(s["headline"])
    tail = [ln for ln in stdout.strip().splitlines() if ln.strip() and not ln.startswith("{")]
    return tail[-1][:200] if tail else ""


def _recordable(model: str) -> bool:
    """A Normalize model's traces keep a relative clock, which kgc validate cannot check."""
    from kgc.conformance.abstraction import SpecConstants

    try:
        return not SpecConstants.from_model(model).normalize
    except (KeyError, LookupError, ValueError):
        return False  # the check stage reports an unknown or broken model


def default_stages(root: Path, model: str, traces: int, seed: int, check_timeout: int = 3600) -> list[Stage]:
    """The harness in the order data flows: the implementation against the scenario contract,
    the spec against its properties (TLC), the two against each other (the implementation's
    runs of the simulated traces are validated too: spec -> implementation -> spec), then the
    proofs."""
    kgc = [sys.executable, "-m", "kgc.tools.entry"]  # signal handlers before the imports
    recordable = _recordable(model)

    def conform_argv(run: Path) -> list[str]:
        extra = ["--record", str(run / "conform-recorded")] if recordable else []
        return kgc + ["conform", str(run / "traces"), "--model", model, *extra, "--json"]

    def validate_argv(run: Path) -> list[str]:
        recorded = run / "conform-recorded"
        return kgc + [
            "validate",
            *([str(recorded)] if recorded.is_dir() else []),
            "--scenarios",
            str(shipped_scenarios()),
            "--random",
            str(traces),
            "--seed",
            str(seed),
            "--out",
            str(run / "recorded"),
            "--json",
        ]

    return [
        Stage(
            "replay",
            lambda run: kgc + ["replay", *_scenario_files(root)],
            _replay_headline,
            json_last_line=False,
            junit=True,
        ),
        Stage(
            "check",
            lambda run: (
                kgc
                + [
                    "check",
                    "--model",
                    model,
                    "--workers",
                    "2",
                    "--timeout",
                    str(check_timeout),
                    "--json",
                    "--out",
                    str(run / "check"),
                ]
            ),
            _check_headline,
            junit=True,
        ),
        Stage(
            "conform",
            conform_argv,
            _generic_headline,
            before=lambda run: (
                kgc
                + [
                    "simulate",
                    "--model",
                    model,
                    "--traces",
                    str(traces),
                    "--seed",
                    str(seed),
                    "--out",
                    str(run / "traces"),
                ]
            ),
            junit=True,
        ),
        Stage("validate", validate_argv, _generic_headline, junit=True),
        Stage("prove", lambda run: kgc + ["prove", "--json"], _prove_headline, junit=True),
    ]


INTERRUPTED = 130  # the shell's code for a command ended by SIGINT (128 + 2)
STOP_GRACE_SECONDS = 15.0


def _run_child(argv: list[str]) -> tuple[int, str]:
    """Run one stage command in its own session and return (exit code, stdout).

    Its own session, so a Ctrl-C on the terminal reaches kgc all alone, which then hands it on
    as SIGINT to the whole stage group: the stage's kgc command ends its own children (TLC runs
    in a session of its own too) before it exits. A stage that does not end within the grace
    period gets SIGTERM, then SIGKILL. subprocess.run would SIGKILL the direct child only, and
    the TLC it started would run on, orphaned.
    """
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=None, text=True, start_new_session=True)
    try:
        stdout, _ = proc.communicate()
        return proc.returncode, stdout
    except BaseException:
        _stop_group(proc)
        raise


def _stop_group(proc: subprocess.Popen[str]) -> None:
    for sig, grace in ((signal.SIGINT, STOP_GRACE_SECONDS), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.communicate(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # the leader may be gone while members of its group linger
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stage_junit(run_dir: Path, name: str) -> Path:
    return run_dir / f"{name}.junit.xml"


def run_stage(stage: Stage, run_dir: Path, console: Console) -> StageResult:
    argv = stage.argv(run_dir)
    if stage.junit:
        argv = argv + ["--junit", str(stage_junit(run_dir, stage.name))]
    started = time.monotonic()
    if stage.before is not None:
        prep = stage.before(run_dir)
        console.print(f"[bold]== {stage.name} (prepare)[/bold]  [dim]{' '.join(prep[2:])}[/dim]")
        code, stdout = _run_child(prep)
        if code != 0:
            tail = "\n".join(stdout.strip().splitlines()[-40:])
            return StageResult(
                stage.name,
                prep,
                code,
                time.monotonic() - started,
                f"preparing command failed: {' '.join(prep[2:4])}",
                {},
                tail,
            )
    console.print(
        f"[bold]== {stage.name}[/bold]  [dim]{shlex.join(argv[2:]) if len(argv) < 12 else ' '.join(argv[2:6]) + ' ...'}[/dim]"
    )
    # stderr is passed through so each stage's own progress display reaches the user live.
    code, stdout = _run_child(argv)
    seconds = time.monotonic() - started
    summary = _last_json(stdout) if stage.json_last_line else {}
    headline = stage.headline(stdout, summary)
    tail = "\n".join(stdout.strip().splitlines()[-40:])
    (run_dir / f"{stage.name}.out").write_text(stdout)
    return StageResult(stage.name, argv, code, seconds, headline, summary, tail)


def stage_pages(result: StageResult) -> list[str]:
    """The `kgc show` pages a stage wrote (check: its counterexample; conform: divergences)."""
    pages = result.summary.get("pages") or ([result.summary["page"]] if result.summary.get("page") else [])
    return [str(p) for p in pages]


def merge_junit(run_dir: Path, results: list[StageResult], stages: list[Stage], target: Path) -> Path:
    """One JUnit file for the run: every stage's suites; a stage that left no file (it crashed,
    was interrupted, or its preparing command failed) is one error case saying so."""
    from kgc.tools.junit import Case, Suite, read_junit, write_junit

    wants = {s.name for s in stages if s.junit}
    suites: list[Suite] = []
    for r in results:
        if r.name not in wants:
            continue
        path = stage_junit(run_dir, r.name)
        try:
            suites.extend(read_junit(path))
            continue
        except Exception:  # noqa: BLE001 - missing or half-written (ET.ParseError): no result either
            pass
        case = Case(r.name, "kgc.all", r.seconds, failure=f"exit {r.exit_code}: {r.headline}", details=r.output_tail)
        case.error = True
        suites.append(Suite(f"kgc all: {r.name}", [case], r.seconds))
    return write_junit(target, suites, name="kgc all")


def run_all(root: Path, run_dir: Path, stages: list[Stage], console: Console) -> list[StageResult]:
    """Run the stages in order. Interrupted (Ctrl-C, SIGTERM), the stage running is stopped with
    its children and recorded as interrupted, the rest as not run, and summary.json is written
    all the same; the KeyboardInterrupt then goes on up so the caller writes the report."""
    writable_dir(run_dir, "--out", "all")
    results: list[StageResult] = []
    try:
        for stage in stages:
            started = time.monotonic()
            try:
                result = run_stage(stage, run_dir, console)
            except KeyboardInterrupt:
                results.append(
                    StageResult(
                        stage.name,
                        stage.argv(run_dir),
                        INTERRUPTED,
                        time.monotonic() - started,
                        "interrupted: stopped with its children",
                    )
                )
                raise
            mark = "[green]PASS[/green]" if result.passed else f"[red]FAIL (exit {result.exit_code})[/red]"
            console.print(f"   {mark} {result.headline}  [dim]({result.seconds:.1f} s)[/dim]")
            for page in stage_pages(result):
                console.print(f"   page: {page}", markup=False, soft_wrap=True)
            results.append(result)
    finally:
        (run_dir / "summary.json").write_text(json.dumps([asdict(r) for r in results], indent=2))
    return results


def all_command(
    model: ModelOption = DEFAULT_MODEL,
    traces: Annotated[int, typer.Option(help="Simulated spec traces to conform.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed for the simulated traces.")] = 1,
    out: Annotated[Path | None, typer.Option(help="Run folder; default runs/all-<time>/.")] = None,
    only: Annotated[str | None, typer.Option(help="Comma-separated stage names to run.")] = None,
    check_timeout: Annotated[int, typer.Option(help="Seconds TLC may take in the check stage (exit 22 after).")] = 3600,
    junit: JunitOption = None,
    open_report: Annotated[bool, typer.Option("--open", help="Open the report in the default browser.")] = False,
) -> None:
    """The main job: replay the scenarios, TLC-check the model, conform spec and implementation
    both ways, prove the invariants; a summary table and runs/all-*/report.html at the end."""
    from kgc.tools.junit import junit_target
    from kgc.tools.report import write_report

    junit_target(junit, "all")

    # soft_wrap: piped into a log, rich would otherwise wrap every line at 80 columns, mid-word
    console = Console(stderr=True, soft_wrap=True)
    root = Path.cwd()
    # the pid keeps two runs started in the same second apart
    run_dir = out or Path("runs") / f"{time.strftime('all-%Y%m%d-%H%M%S')}-{os.getpid()}"
    stages = default_stages(root, model, traces, seed, check_timeout)
    if only:
        wanted = {s.strip() for s in only.split(",")}
        unknown = wanted - {s.name for s in stages}
        if unknown:
            console.print(f"kgc all: error: unknown stage(s) {sorted(unknown)}; stages: {[s.name for s in stages]}")
            raise typer.Exit(1)
        stages = [s for s in stages if s.name in wanted]
    results: list[StageResult] = []
    try:
        results = run_all(root, run_dir, stages, console)
    except KeyboardInterrupt:
        results = [StageResult(**r) for r in json.loads((run_dir / "summary.json").read_text())]
        merge_junit(run_dir, results, stages, junit or run_dir / "junit.xml")
        page = write_report(run_dir, results)
        console.print(
            f"\nkgc all: interrupted during stage {results[-1].name if results else '?'}; "
            f"report of the stages so far: {page}"
        )
        typer.echo(
            json.dumps(
                {
                    "ok": False,
                    "interrupted": True,
                    "stages": {r.name: r.exit_code for r in results},
                    "report": str(page),
                }
            )
        )
        raise typer.Exit(INTERRUPTED) from None
    merged = merge_junit(run_dir, results, stages, run_dir / "junit.xml")
    if junit is not None:
        merge_junit(run_dir, results, stages, junit)
    page = write_report(run_dir, results)
    failed = [r for r in results if not r.passed]
    console.print(f"\njunit: {junit or merged}", markup=False, soft_wrap=True)
    console.print(
        f"report: {page.resolve()}  (open it in a browser; kgc all --open does)", markup=False, soft_wrap=True
    )
    if open_report:
        from kgc.tools.cmd_show import open_in_browser

        open_in_browser(page)
    typer.echo(("FAILED: " + ", ".join(r.name for r in failed)) if failed else f"ALL {len(results)} STAGES PASSED")
    typer.echo(json.dumps({"ok": not failed, "stages": {r.name: r.exit_code for r in results}, "report": str(page)}))
    raise typer.Exit(max((r.exit_code for r in failed), default=0))


def register(app: typer.Typer) -> None:
    app.command("all")(all_command)
