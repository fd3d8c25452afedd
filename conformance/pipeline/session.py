"""One SparkSession for every pipeline, started the way users run Spark: local mode by default,
any master by a flag, quiet, Java from PATH, and the driver's interpreter on the workers.

Why a helper: PySpark's defaults are wrong for a command-line tool -- a web UI on port 4040, a
console progress bar that fights rich's, INFO logs on stderr, scratch files in /tmp shared by
every run, and workers started with whatever `python3` is on PATH (not the venv that has kgc).
Measured settings are in the project's toolchain notes (startup 7-10 s; workers reused).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["BadMaster", "DEFAULT_MASTER", "INSTALL_HINT", "SparkMissing", "spark_available", "spark_session"]

DEFAULT_MASTER = "local[*]"
INSTALL_HINT = "PySpark is not installed: pip install 'kgc[spark]' (or KGC_EXTRAS=spark bash scripts/setup.sh)"


_MASTER_SCHEMES = ("local", "spark://", "k8s://", "yarn")  # SparkSubmit.prepareSubmitEnvironment's check


class BadMaster(ValueError):
    """A --master Spark would refuse; raised before any JVM starts, so the command can say it in
    one line instead of spark-submit's stack trace."""


class SparkMissing(RuntimeError):
    """PySpark (the optional `spark` extra) or Java is not there; the message says how to fix it."""


def spark_available() -> bool:
    return importlib.util.find_spec("pyspark") is not None


# Errors only, from the JVM's first line on: setLogLevel("ERROR") comes after the session is up,
# when Spark has already printed its "default log4j profile" notice and start-up warnings (the
# native-hadoop library, spark.local.dir) on the user's terminal. The repl logger is set to the
# root's level in the hope of silencing PySpark's "Setting default log level" notice (Spark's
# Logging prints it when they differ); measured, the notice still prints, as does the JVM's
# "Using incubator modules" line.
_LOG4J2 = """\
rootLogger.level = error
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


#: The throughput collector for the local-mode JVM: a pipeline is a batch job, so GC pauses do
#: not matter, its CPU does. G1 (the default on two cores) costs write barriers on the executor
#: threads and more GC and JIT work: `kgc pipeline logs` over 256 MiB took 0.90 and 0.91 of G1's
#: CPU in two rounds run side by side with it (docs/measurements.md, issue 14). C1-only JIT was
#: measured too and not kept: its code ran the executor tasks ~1.7x slower, more than the JIT it saves.
JVM_FLAGS = "-XX:+UseParallelGC"


def _quiet_conf(scratch: Path, partitions: int) -> dict[str, str]:
    log4j = scratch / "log4j2.properties"
    log4j.write_text(_LOG4J2)
    java_options = f"{JVM_FLAGS} -Djava.io.tmpdir={scratch / 'tmp'} -Dlog4j2.configurationFile={log4j.as_uri()}"
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.default.parallelism": str(partitions),
        "spark.driver.memory": os.environ.get("KGC_SPARK_DRIVER_MEMORY", "1g"),
        "spark.local.dir": str(scratch / "local"),
        "spark.driver.extraJavaOptions": java_options,
        "spark.executor.extraJavaOptions": java_options,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
    }


@contextmanager
def spark_session(
    master: str | None = None, app_name: str = "kgc", partitions: int = 2, conf: dict[str, Any] | None = None
) -> Iterator[SparkSession]:
    """Start (and always stop) a SparkSession; scratch space is a fresh temp folder removed after.

    Raises SparkMissing when pyspark or java is missing, so commands can exit 2 with the hint."""
    if master and not master.startswith(_MASTER_SCHEMES):
        # spark-submit would say the same after starting a JVM that prints its stack on our stderr
        raise BadMaster(f"master {master!r}: Spark masters are local[N], local[*], spark://HOST:PORT, k8s://..., yarn")
    if not spark_available():
        raise SparkMissing(INSTALL_HINT)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SparkMissing("Spark needs Java 17 on PATH (or JAVA_HOME): java was not found")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    scratch = Path(tempfile.mkdtemp(prefix="kgc-spark-"))
    (scratch / "local").mkdir()
    (scratch / "tmp").mkdir()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Under spark-submit (which starts the JVM and sets PYSPARK_GATEWAY_PORT) the master is
        # spark-submit's --master unless one is given here.
        builder = builder.master(master or DEFAULT_MASTER)
    for key, value in {**_quiet_conf(scratch, partitions), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
