"""Re-record tests/spec/fixtures/output/ from the fixture specs with the real TLC.

Run by hand after changing a fixture spec or the TLC options kgc passes:
    .venv/bin/python tests/spec/record_outputs.py
The parser tests read these files, so they test against what TLC 2.15 really prints; the
live tests in test_tlc_run.py and test_cli_check.py guard against the recordings going stale.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from kgc.spec.catalog import resolve_model
from kgc.spec.tlc import TlcJob, run_tlc

HERE = Path(__file__).parent
SPEC = HERE / "fixtures" / "spec"
OUTPUT = HERE / "fixtures" / "output"

# name of the recording -> (model, extra TLC options, timeout in seconds)
RECORDINGS: dict[str, tuple[str, tuple[str, ...], float | None]] = {
    name: (name, (), None)
    for name in (
        "Ok",
        "Values",
        "Liveness",
        "Stuttering",
        "Deadlock",
        "ParseError",
        "SemanticError",
        "ExtendsBroken",
        "ConfigError",
        "ConfigSyntax",
        "NoInit",
        "ActionProperty",
        "Assert",
        "EvalError",
        "InitInvariant",
        "Printing",
        "plain",
    )
}
RECORDINGS["OkCoverage"] = ("Ok", ("-coverage", "1"), None)
RECORDINGS["ForeverTimeout"] = ("Forever", (), 6.0)


def record(name: str, model_name: str, options: tuple[str, ...], timeout: float | None, scratch: Path) -> int | None:
    model = resolve_model(model_name, SPEC)
    job = TlcJob(module=model.module, config=model.config, modules=model.modules, timeout=timeout, tlc_options=options)
    run_dir = scratch / name
    run_dir.mkdir()
    result = run_tlc(job, run_dir)
    shutil.copyfile(run_dir / "tlc.out", OUTPUT / f"{name}.out")
    print(f"{name:16} {result.outcome} tlc exit {result.tlc_exit_code}", file=sys.stderr)
    return result.tlc_exit_code


def main() -> None:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    exits: dict[str, int | None] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, (model, options, timeout) in RECORDINGS.items():
            exits[name] = record(name, model, options, timeout, Path(scratch))
    (OUTPUT / "exit_codes.json").write_text(json.dumps(exits, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
