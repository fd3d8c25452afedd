"""kgc in a read-only folder and on a full disk: a clear one-line message, the documented exit
code, no traceback, and nothing found is lost.

Real file systems, not mocks: a read-only tmpfs and a 256 KiB tmpfs, mounted by the test (kgc's
tests run as root here, as CI does; mounting needs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

KGC = Path(sys.executable).with_name("kgc")


def mount_tmpfs(target: Path, options: str) -> None:
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True, text=True)
    assert done.returncode == 0, f"cannot mount a tmpfs (the tests need root): {done.stderr}"


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ro"
    mount_tmpfs(folder, "ro,size=64k")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "full"
    mount_tmpfs(folder, "size=256k")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def kgc(*argv: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KGC), *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=os.environ.copy()
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--model", "smoke"],
        ["simulate", "--model", "smoke"],
        ["all", "--only", "prove"],
        ["fuzz", "--bug", "generation_not_bumped", "--examples", "50"],
        ["bench", "purgatory", "--quick"],
        ["validate", "--random", "2", "--out", "recorded"],
    ],
    ids=lambda a: a[0],
)
def test_read_only_working_folder(read_only: Path, argv: list[str]) -> None:
    done = kgc(*argv, cwd=read_only)
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text[-3000:]
    assert done.returncode == 1, text[-2000:]
    assert "Read-only file system" in text and "error" in text, text[-2000:]


def test_conform_record_on_a_read_only_folder(read_only: Path, tmp_path: Path) -> None:
    traces = tmp_path / "t"
    assert (
        kgc(
            "simulate", "--model", "smoke", "--traces", "1", "--depth", "5", "--out", str(traces), cwd=tmp_path
        ).returncode
        == 0
    )
    done = kgc("conform", str(traces), "--record", str(read_only / "rec"), cwd=tmp_path)
    assert "Traceback" not in done.stderr and done.returncode == 1
    assert "--record" in done.stderr


def test_simulate_on_a_full_disk_says_so(full_disk: Path) -> None:
    done = kgc(
        "simulate",
        "--model",
        "smoke",
        "--traces",
        "2000",
        "--depth",
        "40",
        "--out",
        str(full_disk / "t"),
        cwd=full_disk.parent,
    )
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text[-3000:]
    assert done.returncode != 0
    assert "No space left on device" in text, text[-2000:]


def test_check_on_a_full_disk_says_so(full_disk: Path) -> None:
    done = kgc("check", "--model", "smoke", "--out", str(full_disk / "run"), cwd=full_disk.parent)
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text[-3000:]
    assert done.returncode != 0, text[-2000:]
    assert "No space left on device" in text or "space" in text.lower(), text[-2000:]


def test_a_fuzz_finding_that_cannot_be_saved_is_printed(tmp_path: Path, full_disk: Path) -> None:
    """The folder is writable when fuzz starts and full when it finds the bug."""
    save = full_disk / "save"
    save.mkdir()
    filler = full_disk / "filler"
    with open(filler, "wb", buffering=0) as f:  # fill the disk up to the last block
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    done = kgc("fuzz", "--bug", "generation_not_bumped", "--examples", "3000", "--save", str(save), cwd=tmp_path)
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text[-3000:]
    assert done.returncode == 10, text[-2000:]
    assert "cannot save the failing scenario" in text and '"steps"' in text, text[-2000:]
