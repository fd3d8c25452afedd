"""A recorded implementation run in the spec's terms, and its file form (ITF JSON).

The recorder writes one; `kgc validate` reads many. A trace carries, besides its states, the
spec constants it was recorded under (durations in spec units, with the milliseconds per unit)
because TLC can only check a batch of traces that share them, and per state the
implementation event it came from, so a failure can be named in the implementation's words.

States hold the spec variables the recorder observed (every state the same set), in
kgc.spec.values form; `lastAction` is always there, since it names the spec action (and
its client and flag) each step must be. `timers`, `store` and `lastAction` may be partial
records (only the fields observed); client variables are functions over the clients used.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgc.spec.itf import ITF_FORMAT_DESCRIPTION, value_from_itf, value_to_itf
from kgc.spec.jsonfile import InputError, read_json
from kgc.spec.values import ModelValue, TlaValue

__all__ = ["RecordedTrace", "TraceConstants", "read_trace", "write_trace"]

FORMAT = "kgc-recorded-trace/1"


@dataclass(frozen=True)
class TraceConstants:
    """Spec constants a trace was recorded under. Durations are in spec units
    (`ms_per_unit` milliseconds each). `max_group_size` None: unbounded (the implementation's
    default; the spec gets a bound no trace can reach)."""

    session: int
    rebalance: int
    initial_delay: int
    new_member_timeout: int
    max_group_size: int | None
    num_ids: int
    clients: tuple[str, ...]
    failovers: int = 0
    ms_per_unit: int = 1
    store_async: bool = False  # the spec's StoreAsync (a deferred group store)
    #: (client, session, rebalance) of clients sending other timeouts than Session/Rebalance
    client_timeouts: tuple[tuple[str, int, int], ...] = ()
    #: group.min/max.session.timeout.ms in spec units (the spec's MinSession/MaxSession)
    min_session: int = 0
    max_session: int = 1000000
    #: the spec's Instances: each group.instance.id as the sorted clients configured with it
    #: (a trace's static clients); TLC checks a batch under one Instances constant
    instances: tuple[tuple[str, ...], ...] = ()
    #: (client, protocol names most preferred first) of clients sending other protocols than
    #: the one "range" (the spec's ProtocolsOf overridden)
    client_protocols: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def protocol_order(self) -> tuple[str, ...]:
        """The spec's ProtocolOrder for this trace: every name in use, ascending."""
        return tuple(sorted({"range"} | {p for _, ps in self.client_protocols for p in ps}))

    def batch_key(self) -> tuple[Any, ...]:
        """Traces with equal keys can share one TLC run (ids, clients and failovers merge)."""
        return (
            self.session,
            self.rebalance,
            self.initial_delay,
            self.new_member_timeout,
            self.max_group_size,
            self.store_async,
            self.client_timeouts,
            self.min_session,
            self.max_session,
            self.instances,
            self.client_protocols,
        )


@dataclass
class RecordedTrace:
    """`states[0]` is the initial state; `origins[k]` says which implementation event state k
    came from. `stopped` is set when recording ended early because the run did something the
    spec does not model (the reason, with the event); the states before it are still a trace."""

    name: str
    constants: TraceConstants
    states: list[dict[str, TlaValue]]
    origins: list[str]
    stopped: str | None = None
    skipped: list[str] = field(default_factory=list)
    source: str = ""
    faults: list[tuple[int, str]] = field(default_factory=list)
    """(state index, what) for each internal error or duplicate answer the coordinator
    recorded (conformance/faults.py): `kgc validate` fails the trace at the first one."""

    @property
    def steps(self) -> int:
        return len(self.states) - 1


def write_trace(path: Path, trace: RecordedTrace) -> None:
    """ITF (Apalache's ADR-015) with kgc's extras under #meta; one state per line."""
    model_values: set[str] = set()
    states = []
    for index, (state, origin) in enumerate(zip(trace.states, trace.origins)):
        encoded: dict[str, Any] = {"#meta": {"index": index, "origin": origin}}
        for name, value in state.items():
            encoded[name] = value_to_itf(value, model_values)
        states.append(encoded)
    meta = {
        "format": "ITF",
        "format-description": ITF_FORMAT_DESCRIPTION,
        "kgc": FORMAT,
        "source": trace.source,
        "description": trace.name,
        "constants": asdict(trace.constants),
        "stopped": trace.stopped,
        "skipped": trace.skipped,
        "faults": [list(f) for f in trace.faults],
        "modelValues": sorted(model_values),
    }
    variables = list(trace.states[0]) if trace.states else []
    head = json.dumps({"#meta": meta, "vars": variables}, ensure_ascii=False)[:-1]
    body = ",\n".join("  " + json.dumps(s, ensure_ascii=False) for s in states)
    path.write_text(f'{head}, "states": [\n{body}\n]}}\n', encoding="utf-8")


def read_trace(path: Path) -> RecordedTrace:
    """A recorded run, schema-checked: InputError (FILE: place: what) for anything else."""
    file = str(path)
    document = read_json(path)
    if not isinstance(document, dict):
        raise InputError(file, None, "a recorded trace is a JSON object")
    meta = document.get("#meta", {})
    if not isinstance(meta, dict) or meta.get("kgc") != FORMAT:
        raise InputError(
            file,
            "#meta.kgc",
            f"not a kgc recorded trace (#meta.kgc = {meta.get('kgc') if isinstance(meta, dict) else None!r})",
        )
    raw_states = document.get("states")
    if not isinstance(raw_states, list) or not raw_states:
        raise InputError(file, "states", "missing or empty: a recorded trace has at least its initial state")
    try:
        consts = dict(meta["constants"])
        consts["clients"] = tuple(consts["clients"])
        consts["client_timeouts"] = tuple((str(c), int(s), int(r)) for c, s, r in consts.get("client_timeouts", ()))
        consts["instances"] = tuple(tuple(str(c) for c in i) for i in consts.get("instances", ()))
        consts["client_protocols"] = tuple(
            (str(c), tuple(str(p) for p in ps)) for c, ps in consts.get("client_protocols", ())
        )
        constants = TraceConstants(**consts)
        model_values = set(meta.get("modelValues", []))
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(file, "#meta.constants", f"missing or malformed ({err})") from None
    states, origins = [], []
    for index, raw in enumerate(raw_states):
        if not isinstance(raw, dict):
            raise InputError(file, f"state {index}", "a state is a JSON object")
        origins.append(str(raw.get("#meta", {}).get("origin", "")) if isinstance(raw.get("#meta", {}), dict) else "")
        try:
            states.append({k: value_from_itf(v, model_values) for k, v in raw.items() if k != "#meta"})
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as err:
            raise InputError(file, f"state {index}", f"not an ITF value ({err})") from None
    names = set(states[0])
    for index, state in enumerate(states):
        if set(state) != names:
            missing = sorted(names - set(state)) or sorted(set(state) - names)
            raise InputError(file, f"state {index}", f"variable {missing[0]} missing or extra")
    return RecordedTrace(
        name=meta.get("description") or Path(path).stem,
        constants=constants,
        states=states,
        origins=origins,
        stopped=meta.get("stopped"),
        skipped=list(meta.get("skipped", [])),
        source=meta.get("source", ""),
        faults=_faults(file, meta.get("faults", [])),
    )


def client(name: str) -> ModelValue:
    return ModelValue(name)


def _faults(file: str, raw: Any) -> list[tuple[int, str]]:
    """#meta.faults: a list of [state index, text] pairs."""
    if not isinstance(raw, list) or not all(
        isinstance(f, list) and len(f) == 2 and isinstance(f[0], int) and isinstance(f[1], str) for f in raw
    ):
        raise InputError(file, "#meta.faults", "a list of [state index, text] pairs")
    return [(int(f[0]), str(f[1])) for f in raw]
