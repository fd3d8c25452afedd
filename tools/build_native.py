"""`python -m kgc.tools.build_native`: compile kgc.impl's hot modules (kgc.impl.native) with mypyc.

They are timer, purgatory, delayed, group and fake_operation (the purgatory benchmark's operation).

Why a separate step and not a build hook in pyproject: the compiled modules are an
optimisation with a pure-Python fallback, so installing kgc must not need mypy and a C
compiler (pip's isolated build would have to fetch both, and a machine without gcc could not
install at all). scripts/setup.sh runs this after ``pip install -e``; when it fails (no
compiler, no Python headers) setup says so and everything runs on the sources.

It copies kgc.impl's sources (the compiled ones, and the rest for their types: delayed.py's
operations call the coordinator) into a scratch ``kgc/impl`` tree, runs mypyc there with the
shared library named ``kgc.impl.wheel__mypyc``, and installs the extensions into kgc.impl's ``_native/`` folder with a stamp of the sources' sha256, which
kgc.impl.native checks before it loads them (a stale build is never used).

Exit codes: 0 built (or already current), 1 the build failed (the reason on one line; the
compiler's output with -v).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["BuildFailed", "build", "main"]

GROUP = "kgc.impl.wheel"
#: Compiled with the coordinator's modules (kgc.impl.native.COMPILED_MODULES) but loaded only by
#: `kgc bench purgatory`: Kafka's FakeOperation, compiled as Kafka's is with its purgatory
#: (kgc/impl/fake_operation.py says why). Kept out of kgc.impl.native so that module, which every
#: test imports, holds no constant for it (Hypothesis draws from the constants it finds).
BENCH_MODULES = ("fake_operation.py",)


def _modules() -> tuple[str, ...]:
    from kgc.impl.native import COMPILED_MODULES

    return (*COMPILED_MODULES, *BENCH_MODULES)


class BuildFailed(Exception):
    """mypyc or the C compiler could not build the extensions."""


def _impl_dir() -> Path:
    import kgc.impl.native

    return Path(kgc.impl.native.__file__).resolve().parent


def _current(impl: Path) -> bool:
    from kgc.impl.native import NATIVE_DIR, STAMP, source_digest

    try:
        stamp = json.loads((NATIVE_DIR / STAMP).read_text())
    except (OSError, ValueError):
        return False
    wanted = {name: source_digest(impl / name) for name in _modules()}
    return stamp.get("sources") == wanted and stamp.get("python") == sys.version and stamp.get("files") is not None


def build(verbose: bool = False, force: bool = False) -> Path:
    """Compile the modules into kgc.impl's _native folder; returns that folder."""
    from kgc.impl.native import NATIVE_DIR, STAMP, source_digest

    modules = _modules()
    impl = _impl_dir()
    if not force and _current(impl):
        return NATIVE_DIR
    try:
        from mypyc.build import mypycify
        from setuptools import Distribution
    except ImportError as exc:
        raise BuildFailed(f"mypyc or setuptools is not installed ({exc}): pip install 'kgc[test]'") from exc
    with tempfile.TemporaryDirectory(prefix="kgc-native-") as scratch:
        root = Path(scratch)
        pkg = root / "kgc" / "impl"
        pkg.mkdir(parents=True)
        (root / "kgc" / "__init__.py").write_text("")
        (pkg / "__init__.py").write_text("")
        # The modules the compiled ones import (for types only: the coordinator, the group) are
        # copied for mypy and not compiled; every kgc.impl module, so none is ever missing.
        for source in impl.glob("*.py"):
            if source.name != "__init__.py":
                shutil.copyfile(source, pkg / source.name)
        digests = {name: source_digest(pkg / name) for name in modules}
        out = io.StringIO()
        cwd = os.getcwd()
        try:
            os.chdir(root)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                extensions = mypycify(
                    [f"kgc/impl/{name}" for name in modules], group_name=GROUP, opt_level="3", target_dir="c"
                )
                dist = Distribution({"name": "kgc-native", "ext_modules": extensions})
                cmd = dist.get_command_obj("build_ext")
                cmd.build_lib = str(root / "lib")  # type: ignore[attr-defined]
                cmd.build_temp = str(root / "tmp")  # type: ignore[attr-defined]
                dist.run_command("build_ext")
        except (SystemExit, Exception) as exc:
            if verbose:
                sys.stderr.write(out.getvalue())
            last = [line for line in out.getvalue().splitlines() if "error" in line.lower()][-1:]
            raise BuildFailed(f"{type(exc).__name__}: {exc}" + (f" ({last[0].strip()})" if last else "")) from exc
        finally:
            os.chdir(cwd)
        if verbose:
            sys.stderr.write(out.getvalue())
        built = sorted((root / "lib").rglob("*.so")) + sorted((root / "lib").rglob("*.pyd"))
        if len(built) != len(modules) + 1:
            raise BuildFailed(f"expected {len(modules) + 1} extensions, the build made {[p.name for p in built]}")
        staging = Path(tempfile.mkdtemp(prefix="_native-", dir=impl))
        try:
            for path in built:
                shutil.copy2(path, staging / path.name)
            stamp = {"sources": digests, "python": sys.version, "files": [p.name for p in built]}
            (staging / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
            # Replace the folder whole, so a reader never sees new extensions with an old stamp.
            old = impl / f"_native-old-{os.getpid()}"
            if NATIVE_DIR.exists():
                NATIVE_DIR.rename(old)
            staging.rename(NATIVE_DIR)
            shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return NATIVE_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kgc.tools.build_native", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="show mypyc's and the compiler's output")
    parser.add_argument("--force", action="store_true", help="rebuild even when the build is current")
    args = parser.parse_args(argv)
    names = [n[:-3] for n in _modules()]
    try:
        where = build(verbose=args.verbose, force=args.force)
    except BuildFailed as exc:
        print(f"build_native: could not compile kgc.impl.{'/'.join(names)}: {exc}", file=sys.stderr)
        return 1
    print(f"build_native: compiled kgc.impl.{', '.join(names)} into {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
