"""Results as JUnit XML, so CI systems (Jenkins, GitLab, GitHub's test reporters) show kgc's
verdicts natively: one test case per scenario, model, trace or invariant x action.

The shape is the de facto format Ant's XMLJUnitResultFormatter established and CI systems read
(`testsuites` > `testsuite` > `testcase` with `failure`, `error` or `skipped`, and
`system-out`); tests/tools/test_junit.py validates what every command writes against an XSD of
that format (tests/tools/fixtures/junit/junit.xsd). A failure's message is one line (the first
divergence, the violated property); its text carries the detail and the path of the page
`kgc show` wrote for it, if any.
"""

from __future__ import annotations

import os
import re
import socket
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Case", "Suite", "junit_target", "read_junit", "write_junit"]

# XML 1.0 allows neither most control characters nor lone surrogates; a trace value may hold them.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _ILLEGAL.sub("\ufffd", text)


@dataclass
class Case:
    """One test case. `failure` (a one-line message) makes it failed; with `error` set it is an
    error instead (the input could not be run); `skipped` (why) makes it skipped."""

    name: str
    classname: str
    seconds: float = 0.0
    failure: str | None = None
    details: str = ""
    error: bool = False
    skipped: str | None = None
    page: str | None = None
    output: str = ""

    @property
    def failed(self) -> bool:
        return self.failure is not None and not self.error

    @property
    def errored(self) -> bool:
        return self.failure is not None and self.error


@dataclass
class Suite:
    name: str
    cases: list[Case] = field(default_factory=list)
    seconds: float | None = None

    @property
    def time(self) -> float:
        return self.seconds if self.seconds is not None else sum(c.seconds for c in self.cases)


def junit_target(path: Path | None, command: str) -> Path | None:
    """Check before any work that the --junit file's folder can be written (exit 1 if not)."""
    if path is None:
        return None
    from kgc.tools.outdir import writable_dir

    writable_dir(Path(path).parent if Path(path).parent != Path("") else Path("."), "--junit", command)
    if Path(path).is_dir():
        import typer

        typer.echo(f"kgc {command}: error: --junit {path}: is a folder, give a file name", err=True)
        raise typer.Exit(1)
    return Path(path)


def _case(case: Case) -> ET.Element:
    node = ET.Element("testcase", name=_clean(case.name), classname=_clean(case.classname), time=f"{case.seconds:.3f}")
    if case.skipped is not None:
        ET.SubElement(node, "skipped", message=_clean(case.skipped))
    elif case.failure is not None:
        body = case.details
        if case.page:
            body = (body + "\n" if body else "") + f"page: {case.page}"
        kind = "error" if case.error else "failure"
        child = ET.SubElement(node, kind, message=_clean(case.failure), type=kind)
        child.text = _clean(body)
    out = case.output or (f"page: {case.page}" if case.page else "")
    if out:
        ET.SubElement(node, "system-out").text = _clean(out)
    return node


def write_junit(path: Path, suites: Sequence[Suite], name: str = "kgc") -> Path:
    """Write atomically (temp file, rename) so a CI step never reads half a file."""
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    for n, suite in enumerate(suites):
        counts = {
            "tests": len(suite.cases),
            "failures": sum(c.failed for c in suite.cases),
            "errors": sum(c.errored for c in suite.cases),
            "skipped": sum(c.skipped is not None for c in suite.cases),
        }
        node = ET.SubElement(
            root,
            "testsuite",
            name=_clean(suite.name),
            tests=str(counts["tests"]),
            failures=str(counts["failures"]),
            errors=str(counts["errors"]),
            skipped=str(counts["skipped"]),
            time=f"{suite.time:.3f}",
            timestamp=stamp,
            hostname=socket.gethostname() or "localhost",
            id=str(n),
        )
        for case in suite.cases:
            node.append(_case(case))
        for key in totals:
            totals[key] += counts[key]
        total_time += suite.time
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    ET.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)
    tmp.replace(path)
    return path


def read_junit(path: Path) -> list[Suite]:
    """The suites of a file write_junit wrote (kgc all merges its stages' files with it)."""
    suites = []
    for node in ET.parse(path).getroot().iter("testsuite"):
        suite = Suite(node.get("name", ""), seconds=float(node.get("time", "0") or 0))
        for tc in node.iter("testcase"):
            case = Case(tc.get("name", ""), tc.get("classname", ""), float(tc.get("time", "0") or 0))
            for kind in ("failure", "error"):
                child = tc.find(kind)
                if child is not None:
                    case.failure = child.get("message", "")
                    case.details = child.text or ""
                    case.error = kind == "error"
            skipped = tc.find("skipped")
            if skipped is not None:
                case.skipped = skipped.get("message", "")
            out = tc.find("system-out")
            if out is not None:
                case.output = out.text or ""
            suite.cases.append(case)
        suites.append(suite)
    return suites


def cases_total(suites: Iterable[Suite]) -> int:
    return sum(len(s.cases) for s in suites)
