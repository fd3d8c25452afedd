"""One TLC run of a trace-checking module: the generated data module and config written under
the run folder, TLC on them with one worker, its output beside them.

Why shared: kgc validate (TraceGroupCoordinator over recorded traces) and pipeline logs
--validate (LogTraceGroupCoordinator over log observations) check generated data the same way;
only the modules and the options differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kgc.spec.tlc import TlcJob, run_tlc
from kgc.spec.tlc_result import CheckResult

__all__ = ["run_trace_module"]


def run_trace_module(
    run_dir: Path,
    trace_module: Path,
    data_module: str,
    data_text: str,
    cfg_text: str,
    modules: Sequence[Path],
    *,
    timeout: float | None,
    tlc_options: Sequence[str] = ("-deadlock",),
) -> tuple[CheckResult, Path]:
    """TLC on `trace_module` with `data_module`.tla = `data_text` and its config = `cfg_text`
    (written to run_dir/src); `modules` are the shipped modules it extends. Returns the result
    and the path of TLC's raw output. Messages name the shipped files, not the copies."""
    src = run_dir / "src"
    src.mkdir(parents=True)
    data = src / f"{data_module}.tla"
    data.write_text(data_text, encoding="utf-8")
    cfg_path = src / f"{trace_module.stem}.cfg"
    cfg_path.write_text(cfg_text, encoding="utf-8")
    job = TlcJob(
        module=trace_module,
        config=cfg_path,
        modules=(*modules, data),
        workers=1,
        timeout=timeout,
        tlc_options=list(tlc_options),
        display_paths={p.name: str(p) for p in (trace_module, *modules)},
    )
    tlc_dir = run_dir / "tlc"
    tlc_dir.mkdir()
    return run_tlc(job, tlc_dir), tlc_dir / "tlc.out"
