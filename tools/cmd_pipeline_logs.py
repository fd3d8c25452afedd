"""`kgc pipeline logs --input PATH_OR_GLOB... --out DIR [--master M] [--json]`: real Kafka broker
logs read on Spark, each consumer group's history rebuilt from the coordinator's messages and
checked against the protocol.

Exit codes: 0 no violation, 10 a violation, 2 an input cannot be read (named on stderr) or
PySpark/Java is missing, 1 a bad --out or a --master Spark would refuse. --validate adds findings of kind "unexplained" (a group's
history no behaviour of the bounded spec model writes), which do not change the exit code: the
model is bounded, so they are not proof of a violation. Damaged content (binary garbage, huge lines, truncated
gzip) is counted and reported, never an error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from kgc.tools.exit_codes import ExitCode
from kgc.tools.options import JsonOption

__all__ = ["INPUT_UNREADABLE", "register"]

INPUT_UNREADABLE = 2


def register(pipeline_app: typer.Typer) -> None:
    @pipeline_app.command("logs")
    def logs(
        inputs: Annotated[
            list[str], typer.Option("--input", "-i", help="A log file (plain or .gz), folder or glob; repeatable.")
        ],
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for events/, findings/, groups/, summary.json.")],
        master: Annotated[str | None, typer.Option("--master", help="Spark master (default local[*]).")] = None,
        rebalance_timeout_ms: Annotated[
            int, typer.Option("--rebalance-timeout-ms", help="For the stuck-in-CompletingRebalance warning.")
        ] = 300_000,
        validate: Annotated[
            bool,
            typer.Option(
                "--validate",
                help="Also ask TLC whether a spec behaviour explains each group's history "
                "(explained / unexplained at event N / too long).",
            ),
        ] = False,
        validate_timeout: Annotated[
            float | None,
            typer.Option("--validate-timeout", help="Seconds per TLC run (one per model shape in each Spark task)."),
        ] = None,
        json_output: JsonOption = False,
    ) -> None:
        """Parse broker logs, rebuild each group's history, report violations and known bug patterns."""
        from rich.console import Console

        from kgc.conformance.pipeline.logs_history import CheckConfig
        from kgc.conformance.pipeline.logs_pipeline import run_logs
        from kgc.conformance.pipeline.session import BadMaster, SparkMissing, spark_session

        err = Console(stderr=True, highlight=False)
        try:
            out.mkdir(parents=True, exist_ok=True)
            probe = out / ".kgc-write-probe"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            err.print(f"{out}: cannot write: {exc.strerror or exc}")
            raise typer.Exit(ExitCode.USAGE) from None
        from kgc.conformance.pipeline.logs_parse import expand_inputs

        files, errors = expand_inputs(inputs)
        if not files:
            for line in errors:
                print(line, file=sys.stderr)
            raise typer.Exit(INPUT_UNREADABLE)
        try:
            with spark_session(master, app_name="kgc-pipeline-logs") as spark:
                outcome = run_logs(
                    spark,
                    inputs,
                    out,
                    CheckConfig(rebalance_timeout_ms=rebalance_timeout_ms),
                    progress=lambda text: err.print(f"[dim]{text}[/dim]"),
                    validate=validate,
                    validate_timeout=validate_timeout,
                )
        except SparkMissing as exc:
            err.print(str(exc))
            raise typer.Exit(INPUT_UNREADABLE) from None
        except BadMaster as exc:
            print(f"kgc pipeline logs: --master: {exc}", file=sys.stderr)
            raise typer.Exit(ExitCode.USAGE) from None
        summary = outcome.summary
        for line in outcome.input_errors:
            print(line, file=sys.stderr)
        for status in summary["file_status"]:
            print(f"{status['file']}: {status['status']}: {status['detail']}", file=sys.stderr)
        for finding in outcome.findings:
            print(
                f"{finding.kind.upper()} {finding.rule} {finding.group} {finding.file}:{finding.line}: {finding.message}"
            )
        cats = summary["categories"]
        print(
            f"{summary['files']} files, {summary['lines']} lines: "
            + ", ".join(f"{k} {v}" for k, v in cats.items())
            + f"; {summary['groups']} groups, {summary['violations']} violations, {summary['warnings']} warnings; "
            f"{summary['understood']:.1%} of coordinator entries understood; {out / 'timeline.html'}"
        )
        if "validation" in summary:
            counts = summary["validation"]["counts"]
            print(
                "validation: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in ("explained", "unexplained", "too long"))
            )
        if json_output:
            keys = ("files", "lines", "events", "unparsed", "groups", "findings")
            print(json.dumps({k: summary[k] for k in keys}))
        sys.stdout.flush()
        if outcome.input_errors:
            raise typer.Exit(INPUT_UNREADABLE)
        raise typer.Exit(ExitCode.SAFETY_VIOLATED if outcome.violations else ExitCode.PASSED)
