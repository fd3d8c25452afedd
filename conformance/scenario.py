"""The scenario file format (versions 1 and 2): parse and validate, nothing else.

The format is a contract (docs/scenario-format.md) that files written by other
people and tools rely on, so every check that can be made without running the coordinator is made
here, before anything runs: a malformed file is rejected whole (exit 2) instead of half-running
and failing somewhere confusing. The one check that needs a run -- a member reference to a join
whose response has not arrived yet when it is used -- lives in `refs.resolve`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgc.spec.jsonfile import InputError, read_json

FORMAT_VERSION = 2
#: Formats this reader knows; version 2 only adds to version 1 (docs/scenario-format.md).
FORMAT_VERSIONS = (1, 2)

#: Error names the contract lets an `expect` name.
ERROR_NAMES: frozenset[str] = frozenset(
    {
        "NONE",
        "UNKNOWN_MEMBER_ID",
        "ILLEGAL_GENERATION",
        "REBALANCE_IN_PROGRESS",
        "INCONSISTENT_GROUP_PROTOCOL",
        "INVALID_SESSION_TIMEOUT",
        "MEMBER_ID_REQUIRED",
        "GROUP_MAX_SIZE_REACHED",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "INVALID_GROUP_ID",
        "UNKNOWN_SERVER_ERROR",
        # v2
        "FENCED_INSTANCE_ID",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "GROUP_ID_NOT_FOUND",
    }
)

#: What a `store` step may say the append to the offsets topic returned (v2).
APPEND_ERROR_NAMES: frozenset[str] = frozenset(
    {
        "NONE",
        "NOT_ENOUGH_REPLICAS",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "REQUEST_TIMED_OUT",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "NOT_LEADER_OR_FOLLOWER",
        "KAFKA_STORAGE_ERROR",
        "MESSAGE_TOO_LARGE",
        "RECORD_LIST_TOO_LARGE",
        "INVALID_FETCH_SIZE",
    }
)

#: v2 `store` config values.
STORE_MODES: frozenset[str] = frozenset({"immediate", "deferred"})

#: Group states an `expect_state` may name (Kafka's GroupState names).
STATE_NAMES: frozenset[str] = frozenset(
    {
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    }
)

#: The contract's defaults. initial_rebalance_delay_ms is 0 here, unlike the broker's 3000, so
#: that a scenario only waits for the initial delay when it says so.
CONFIG_DEFAULTS: dict[str, int | str | None] = {
    "min_session_timeout_ms": 6000,
    "max_session_timeout_ms": 1800000,
    "initial_rebalance_delay_ms": 0,
    "max_group_size": None,
    "store": "immediate",  # v2
}


class ScenarioError(Exception):
    """A file that is not a valid scenario: `kgc replay` exits 2 and prints this."""

    def __init__(self, file: str, step: int | None, message: str) -> None:
        self.file = file
        self.step = step
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}: step {self.step}" if self.step is not None else self.file
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Ref:
    """A member reference `@id`: the member id the response to join `id` carried."""

    request_id: str

    def __str__(self) -> str:
        return "@" + self.request_id


#: A member reference as written: a literal member id, or a Ref to a join's response.
MemberRef = str | Ref


@dataclass(frozen=True)
class ScenarioConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 0
    max_group_size: int | None = None
    store: str = "immediate"  # v2: "immediate" | "deferred"


@dataclass(frozen=True)
class Join:
    id: str
    group: str
    member: MemberRef = ""
    client: str = "client"
    instance: str | None = None
    session_timeout_ms: int = 10000
    rebalance_timeout_ms: int = 10000
    protocol_type: str = "consumer"
    protocols: tuple[tuple[str, str], ...] = (("range", ""),)
    require_known_member: bool = False
    version: int | None = None  # v2: JoinGroup API version; None keeps version 1's meaning

    @property
    def supports_skip_assignment(self) -> bool:
        """JoinGroup v9+ carries KIP-814's skip_assignment."""
        return self.version is not None and self.version >= 9


@dataclass(frozen=True)
class Sync:
    id: str
    group: str
    member: MemberRef
    generation: int
    assignment: tuple[tuple[MemberRef, str], ...] = ()
    instance: str | None = None  # v2
    protocol_type: str | None = None  # v2 (SyncGroup v5)
    protocol: str | None = None  # v2 (SyncGroup v5)


@dataclass(frozen=True)
class Heartbeat:
    id: str
    group: str
    member: MemberRef
    generation: int
    instance: str | None = None  # v2


@dataclass(frozen=True)
class Leave:
    id: str
    group: str
    member: MemberRef
    instance: str | None = None  # v2


@dataclass(frozen=True)
class Commit:
    """v2: an OffsetCommit (GroupCoordinator.handleCommitOffsets)."""

    id: str
    group: str
    member: MemberRef = ""
    generation: int = -1
    instance: str | None = None
    offsets: tuple[tuple[str, int], ...] = (("t-0", 0),)


@dataclass(frozen=True)
class Store:
    """v2: complete the oldest unfinished group-metadata write of `group` with `error`."""

    group: str
    error: str = "NONE"


@dataclass(frozen=True)
class LoadBegin:
    """v2: the coordinator starts loading the group's partition (the loading window)."""

    group: str


@dataclass(frozen=True)
class Tick:
    ms: int


@dataclass(frozen=True)
class Unload:
    group: str


@dataclass(frozen=True)
class Load:
    group: str


Request = Join | Sync | Heartbeat | Leave | Commit
Action = Join | Sync | Heartbeat | Leave | Commit | Tick | Unload | Load | Store | LoadBegin
REQUEST_TYPES: tuple[type, ...] = (Join, Sync, Heartbeat, Leave, Commit)


@dataclass(frozen=True)
class Expect:
    """Checks on the response to request `request_id`; `checks` holds only the keys written."""

    request_id: str
    checks: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExpectState:
    """Checks on the coordinator's view of `group`; `checks` holds only the keys written."""

    group: str
    checks: dict[str, Any] = field(default_factory=dict)


Step = Action | Expect | ExpectState


@dataclass(frozen=True)
class Scenario:
    name: str
    source: str
    config: ScenarioConfig
    steps: tuple[Step, ...]
    file: str


# --- small type checkers -------------------------------------------------------------------


class _Invalid(Exception):
    """Raised inside a step's parser; turned into a ScenarioError naming the step."""


def _is_int(v: Any) -> bool:
    # bool is an int subclass in Python; `true` is not a number of milliseconds
    return isinstance(v, int) and not isinstance(v, bool)


def _int(obj: dict[str, Any], key: str, *, minimum: int | None = None) -> int:
    v = obj[key]
    if not _is_int(v):
        raise _Invalid(f"`{key}` must be an integer, got {json.dumps(v)}")
    if minimum is not None and v < minimum:
        raise _Invalid(f"`{key}` must be >= {minimum}, got {v}")
    return v


def _str(obj: dict[str, Any], key: str) -> str:
    v = obj[key]
    if not isinstance(v, str):
        raise _Invalid(f"`{key}` must be a string, got {json.dumps(v)}")
    return v


def _opt_str(obj: dict[str, Any], key: str) -> str | None:
    v = obj[key]
    if v is not None and not isinstance(v, str):
        raise _Invalid(f"`{key}` must be a string or null, got {json.dumps(v)}")
    return v


def _bool(obj: dict[str, Any], key: str) -> bool:
    v = obj[key]
    if not isinstance(v, bool):
        raise _Invalid(f"`{key}` must be true or false, got {json.dumps(v)}")
    return v


def _member_ref(v: Any, what: str) -> MemberRef:
    if not isinstance(v, str):
        raise _Invalid(f"{what} must be a member reference (a string), got {json.dumps(v)}")
    if v.startswith("@"):
        if len(v) == 1:
            raise _Invalid(f"{what} `@` names no request")
        return Ref(v[1:])
    return v


def _member_ref_list(obj: dict[str, Any], key: str) -> tuple[MemberRef, ...]:
    v = obj[key]
    if not isinstance(v, list):
        raise _Invalid(f"`{key}` must be a list of member references, got {json.dumps(v)}")
    return tuple(_member_ref(x, f"`{key}` entry") for x in v)


def _check_keys(obj: dict[str, Any], required: set[str], optional: set[str], what: str) -> None:
    missing = sorted(required - obj.keys())
    if missing:
        raise _Invalid(f"{what} is missing required key(s) {', '.join(missing)}")
    unknown = sorted(obj.keys() - required - optional)
    if unknown:
        raise _Invalid(f"unknown key(s) {', '.join(unknown)} in {what}")


# --- steps ---------------------------------------------------------------------------------


def _parse_join(s: dict[str, Any]) -> Join:
    _check_keys(
        s,
        {"do", "id", "group"},
        {
            "member",
            "client",
            "instance",
            "session_timeout_ms",
            "rebalance_timeout_ms",
            "protocol_type",
            "protocols",
            "require_known_member",
            "version",
        },
        "a `join`",
    )
    session = _int(s, "session_timeout_ms") if "session_timeout_ms" in s else 10000
    protocols: tuple[tuple[str, str], ...] = (("range", ""),)
    if "protocols" in s:
        raw = s["protocols"]
        if not isinstance(raw, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in raw
        ):
            raise _Invalid(f"`protocols` must be a list of [name, metadata] string pairs, got {json.dumps(raw)}")
        protocols = tuple((p[0], p[1]) for p in raw)
    instance = _opt_str(s, "instance") if "instance" in s else None
    require_known = _bool(s, "require_known_member") if "require_known_member" in s else False
    version: int | None = None
    if "version" in s and s["version"] is not None:
        version = _int(s, "version", minimum=0)
        # KafkaApis.handleJoinGroupRequest: requireKnownMemberId = version >= 4 && no instance id
        # (a static member is never asked for MEMBER_ID_REQUIRED, so the flag is moot for it).
        if "require_known_member" in s and require_known != (version >= 4):
            raise _Invalid(
                f"`require_known_member` {json.dumps(require_known)} contradicts JoinGroup `version` {version} "
                f"(MEMBER_ID_REQUIRED from version 4 on)"
            )
        require_known = version >= 4
        if instance is not None and version < 5:
            raise _Invalid(f"`instance` needs JoinGroup version 5 or later, got `version` {version}")
    return Join(
        id=_str(s, "id"),
        group=_str(s, "group"),
        member=_member_ref(s["member"], "`member`") if "member" in s else "",
        client=_str(s, "client") if "client" in s else "client",
        instance=_opt_str(s, "instance") if "instance" in s else None,
        session_timeout_ms=session,
        rebalance_timeout_ms=(_int(s, "rebalance_timeout_ms") if "rebalance_timeout_ms" in s else session),
        protocol_type=_str(s, "protocol_type") if "protocol_type" in s else "consumer",
        protocols=protocols,
        require_known_member=require_known,
        version=version,
    )


def _parse_sync(s: dict[str, Any]) -> Sync:
    _check_keys(
        s,
        {"do", "id", "group", "member", "generation"},
        {"assignment", "instance", "protocol_type", "protocol"},
        "a `sync`",
    )
    assignment: tuple[tuple[MemberRef, str], ...] = ()
    if "assignment" in s:
        raw = s["assignment"]
        if not isinstance(raw, dict):
            raise _Invalid(f"`assignment` must be an object, got {json.dumps(raw)}")
        pairs = []
        for k, v in raw.items():
            if not isinstance(v, str):
                raise _Invalid(f"`assignment` value for {k!r} must be a string, got {json.dumps(v)}")
            pairs.append((_member_ref(k, "`assignment` key"), v))
        assignment = tuple(pairs)
    return Sync(
        id=_str(s, "id"),
        group=_str(s, "group"),
        member=_member_ref(s["member"], "`member`"),
        generation=_int(s, "generation"),
        assignment=assignment,
        instance=_opt_str(s, "instance") if "instance" in s else None,
        protocol_type=_opt_str(s, "protocol_type") if "protocol_type" in s else None,
        protocol=_opt_str(s, "protocol") if "protocol" in s else None,
    )


def _parse_heartbeat(s: dict[str, Any]) -> Heartbeat:
    _check_keys(s, {"do", "id", "group", "member", "generation"}, {"instance"}, "a `heartbeat`")
    return Heartbeat(
        id=_str(s, "id"),
        group=_str(s, "group"),
        member=_member_ref(s["member"], "`member`"),
        generation=_int(s, "generation"),
        instance=_opt_str(s, "instance") if "instance" in s else None,
    )


def _parse_leave(s: dict[str, Any]) -> Leave:
    _check_keys(s, {"do", "id", "group", "member"}, {"instance"}, "a `leave`")
    return Leave(
        id=_str(s, "id"),
        group=_str(s, "group"),
        member=_member_ref(s["member"], "`member`"),
        instance=_opt_str(s, "instance") if "instance" in s else None,
    )


def _parse_commit(s: dict[str, Any]) -> Commit:
    _check_keys(s, {"do", "id", "group"}, {"member", "generation", "instance", "offsets"}, "a `commit`")
    offsets: tuple[tuple[str, int], ...] = (("t-0", 0),)
    if "offsets" in s:
        raw = s["offsets"]
        if not isinstance(raw, dict) or not raw:
            raise _Invalid(f"`offsets` must be a non-empty object (partition -> offset), got {json.dumps(raw)}")
        pairs = []
        for k, v in raw.items():
            if not _is_int(v) or v < 0:
                raise _Invalid(f"`offsets` value for {k!r} must be an integer >= 0, got {json.dumps(v)}")
            pairs.append((k, v))
        offsets = tuple(pairs)
    return Commit(
        id=_str(s, "id"),
        group=_str(s, "group"),
        member=_member_ref(s["member"], "`member`") if "member" in s else "",
        generation=_int(s, "generation") if "generation" in s else -1,
        instance=_opt_str(s, "instance") if "instance" in s else None,
        offsets=offsets,
    )


def _parse_store(s: dict[str, Any]) -> Store:
    _check_keys(s, {"do", "group"}, {"error"}, "a `store`")
    error = _str(s, "error") if "error" in s else "NONE"
    if error not in APPEND_ERROR_NAMES:
        raise _Invalid(f"`error` {error!r} is not one of {', '.join(sorted(APPEND_ERROR_NAMES))}")
    return Store(group=_str(s, "group"), error=error)


def _parse_load_begin(s: dict[str, Any]) -> LoadBegin:
    _check_keys(s, {"do", "group"}, set(), "a `load_begin`")
    return LoadBegin(group=_str(s, "group"))


def _parse_tick(s: dict[str, Any]) -> Tick:
    _check_keys(s, {"do", "ms"}, set(), "a `tick`")
    return Tick(ms=_int(s, "ms", minimum=0))


def _parse_unload(s: dict[str, Any]) -> Unload:
    _check_keys(s, {"do", "group"}, set(), "an `unload`")
    return Unload(group=_str(s, "group"))


def _parse_load(s: dict[str, Any]) -> Load:
    _check_keys(s, {"do", "group"}, set(), "a `load`")
    return Load(group=_str(s, "group"))


_ACTIONS = {
    "join": _parse_join,
    "sync": _parse_sync,
    "heartbeat": _parse_heartbeat,
    "leave": _parse_leave,
    "tick": _parse_tick,
    "unload": _parse_unload,
    "load": _parse_load,
    "commit": _parse_commit,
    "store": _parse_store,
    "load_begin": _parse_load_begin,
}

#: What version 2 added; a format-1 file using any of it is rejected, so a version-1 file keeps
#: exactly its version-1 meaning.
_V2_ACTIONS = {"commit", "store", "load_begin"}
_V2_STEP_KEYS = {
    "join": {"version"},
    "sync": {"instance", "protocol_type", "protocol"},
    "heartbeat": {"instance"},
    "leave": {"instance"},
}
_V2_EXPECT_KEYS = {"skip_assignment", "protocol_type"}
_V2_STATE_KEYS = {"static_members", "unfinished_writes", "stored_generation", "loading"}


def _v2_feature(raw: dict[str, Any]) -> str | None:
    """The first version-2 addition a raw step uses, None if it uses none."""
    do = raw.get("do")
    if do in _V2_ACTIONS:
        return f"`do` {json.dumps(do)}"
    extra = sorted(set(raw) & _V2_STEP_KEYS.get(do, set())) if isinstance(do, str) else []
    if "expect" in raw:
        extra = sorted(set(raw) & _V2_EXPECT_KEYS)
    if "expect_state" in raw:
        extra = sorted(set(raw) & _V2_STATE_KEYS)
    return f"key(s) {', '.join(extra)}" if extra else None


#: Which `expect` keys apply to which request: a key that cannot be checked against that kind
#: of response is an error, not a silent pass.
_EXPECT_KEYS: dict[type, set[str]] = {
    Join: {"error", "pending", "generation", "leader", "member_id_given", "members", "protocol"},
    Sync: {"error", "pending", "assignment"},
    Heartbeat: {"error", "pending"},
    Leave: {"error", "pending"},
    Commit: {"error", "pending"},
}
_EXPECT_KEYS[Join] |= {"skip_assignment"}
_EXPECT_KEYS[Sync] |= {"protocol_type"}

_ALL_EXPECT_KEYS = set().union(*_EXPECT_KEYS.values())


def _parse_expect(s: dict[str, Any]) -> Expect:
    _check_keys(s, {"expect"}, _ALL_EXPECT_KEYS, "an `expect`")
    request_id = _str(s, "expect")
    checks: dict[str, Any] = {}
    for key in s:
        if key == "expect":
            continue
        if key == "error":
            name = _str(s, key)
            if name not in ERROR_NAMES:
                raise _Invalid(f"`error` {name!r} is not one of {', '.join(sorted(ERROR_NAMES))}")
            checks[key] = name
        elif key in ("pending", "member_id_given", "skip_assignment"):
            checks[key] = _bool(s, key)
        elif key == "generation":
            checks[key] = _int(s, key)
        elif key == "leader":
            checks[key] = _member_ref(s[key], "`leader`")
        elif key == "members":
            checks[key] = _member_ref_list(s, key)
        elif key == "protocol":
            checks[key] = _opt_str(s, key)
        elif key == "assignment":
            checks[key] = _str(s, key)
        elif key == "protocol_type":
            checks[key] = _opt_str(s, key)
    if checks.get("pending") is True and len(checks) > 1:
        others = ", ".join(sorted(k for k in checks if k != "pending"))
        raise _Invalid(f"`pending: true` says no response has arrived, so {others} cannot be checked")
    return Expect(request_id=request_id, checks=checks)


_STATE_KEYS = {"state", "generation", "members", "leader", "member_count", "pending_count", "protocol"} | _V2_STATE_KEYS


def _parse_expect_state(s: dict[str, Any]) -> ExpectState:
    _check_keys(s, {"expect_state"}, _STATE_KEYS, "an `expect_state`")
    group = _str(s, "expect_state")
    checks: dict[str, Any] = {}
    for key in s:
        if key == "expect_state":
            continue
        if key == "state":
            name = _str(s, key)
            if name not in STATE_NAMES:
                raise _Invalid(f"`state` {name!r} is not one of {', '.join(sorted(STATE_NAMES))}")
            checks[key] = name
        elif key in ("generation",):
            checks[key] = _int(s, key)
        elif key in ("member_count", "pending_count", "unfinished_writes"):
            checks[key] = _int(s, key, minimum=0)
        elif key == "members":
            checks[key] = _member_ref_list(s, key)
        elif key == "leader":
            checks[key] = None if s[key] is None else _member_ref(s[key], "`leader`")
        elif key == "protocol":
            checks[key] = _opt_str(s, key)
        elif key == "stored_generation":
            checks[key] = None if s[key] is None else _int(s, key, minimum=0)
        elif key == "loading":
            checks[key] = _bool(s, key)
        elif key == "static_members":
            raw = s[key]
            if not isinstance(raw, dict):
                raise _Invalid(
                    f"`static_members` must be an object (instance id -> member reference), got {json.dumps(raw)}"
                )
            checks[key] = tuple((k, _member_ref(v, f"`static_members` value for {k!r}")) for k, v in raw.items())
    return ExpectState(group=group, checks=checks)


def parse_step(raw: Any) -> Step:
    """One step object -> a typed step; raises _Invalid with what is wrong."""
    if not isinstance(raw, dict):
        raise _Invalid(f"a step must be an object, got {json.dumps(raw)}")
    _reject_duplicate_keys(raw, "the step")
    kinds = [k for k in ("do", "expect", "expect_state") if k in raw]
    if len(kinds) != 1:
        found = ", ".join(kinds) if kinds else "none"
        raise _Invalid(f"a step needs exactly one of do, expect, expect_state (found {found})")
    if kinds[0] == "expect":
        return _parse_expect(raw)
    if kinds[0] == "expect_state":
        return _parse_expect_state(raw)
    do = raw["do"]
    if not isinstance(do, str) or do not in _ACTIONS:
        raise _Invalid(f"unknown `do` {json.dumps(do)} (expected one of {', '.join(_ACTIONS)})")
    return _ACTIONS[do](raw)


# --- top level -----------------------------------------------------------------------------


class _JsonObject(dict):
    """A decoded JSON object that remembers keys written twice (json keeps only the last one,
    which would silently drop half of a step such as {"do": "join", ..., "do": "sync"})."""

    duplicates: list[str]


def _object_pairs(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject()
    obj.duplicates = []
    for k, v in pairs:
        if k in obj:
            obj.duplicates.append(k)
        obj[k] = v
    return obj


def _reject_duplicate_keys(obj: Any, what: str) -> None:
    dupes = getattr(obj, "duplicates", None)
    if dupes:
        raise _Invalid(f"key(s) {', '.join(sorted(set(dupes)))} written twice in {what}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_config(file: str, raw: Any) -> ScenarioConfig:
    if not isinstance(raw, dict):
        raise ScenarioError(file, None, f"`config` must be an object, got {json.dumps(raw)}")
    try:
        _reject_duplicate_keys(raw, "`config`")
    except _Invalid as e:
        raise ScenarioError(file, None, str(e)) from None
    unknown = sorted(raw.keys() - CONFIG_DEFAULTS.keys())
    if unknown:
        # The contract lists the config keys; a misspelt one silently falling back to the
        # default would make the scenario test something other than what its author meant.
        raise ScenarioError(file, None, f"unknown `config` key(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    if "store" in raw:
        if raw["store"] not in STORE_MODES:
            raise ScenarioError(
                file, None, f'in `config`: `store` must be "immediate" or "deferred", got {json.dumps(raw["store"])}'
            )
        values["store"] = raw["store"]
    try:
        for key in ("min_session_timeout_ms", "max_session_timeout_ms", "initial_rebalance_delay_ms"):
            if key in raw:
                values[key] = _int(raw, key, minimum=0)
        if "max_group_size" in raw and raw["max_group_size"] is not None:
            values["max_group_size"] = _int(raw, "max_group_size", minimum=1)
    except _Invalid as e:
        raise ScenarioError(file, None, f"in `config`: {e}") from None
    return ScenarioConfig(**values)


def _request_id(step: Step) -> str | None:
    return step.id if isinstance(step, REQUEST_TYPES) else None


def member_refs(step: Step) -> list[Ref]:
    """Every member reference a step uses, in the order it uses them."""
    out: list[MemberRef] = []
    if isinstance(step, REQUEST_TYPES):
        out.append(step.member)
    if isinstance(step, Sync):
        out.extend(k for k, _ in step.assignment)
    if isinstance(step, (Expect, ExpectState)):
        if step.checks.get("leader") is not None:
            out.append(step.checks["leader"])
        out.extend(step.checks.get("members", ()))
        out.extend(ref for _, ref in step.checks.get("static_members", ()))
    return [r for r in out if isinstance(r, Ref)]


def check_references(file: str, steps: tuple[Step, ...]) -> None:
    """The static half of reference checking: ids unique, every `expect` and `@ref` names a
    request sent in an earlier step, and every `@ref` names a join. Whether that join has been
    answered by the time the reference is used can only be known by running (refs.resolve)."""
    sent: dict[str, Step] = {}
    for index, step in enumerate(steps):
        for ref in member_refs(step):
            target = sent.get(ref.request_id)
            if target is None:
                later = any(_request_id(s) == ref.request_id for s in steps[index:])
                why = "is sent only later, so it has no response yet" if later else "does not exist"
                raise ScenarioError(file, index, f"member reference {ref}: request {ref.request_id!r} {why}")
            if not isinstance(target, Join):
                raise ScenarioError(file, index, f"member reference {ref}: request {ref.request_id!r} is not a join")
        if isinstance(step, Expect):
            if step.request_id not in sent:
                later = any(_request_id(s) == step.request_id for s in steps[index:])
                why = "is sent only in a later step" if later else "does not exist"
                raise ScenarioError(file, index, f"`expect` names request {step.request_id!r} which {why}")
            target = sent[step.request_id]
            allowed = _EXPECT_KEYS[type(target)]
            wrong = sorted(set(step.checks) - allowed)
            if wrong:
                kind = type(target).__name__.lower()
                raise ScenarioError(
                    file, index, f"key(s) {', '.join(wrong)} cannot be checked on the response to a `{kind}`"
                )
        request_id = _request_id(step)
        if request_id is not None:
            if request_id in sent:
                raise ScenarioError(file, index, f"duplicate request id {request_id!r}")
            sent[request_id] = step


_TOP_LEVEL_KEYS = {"format", "name", "source", "config", "steps"}


def parse_scenario(data: Any, file: str) -> Scenario:
    """Validate a decoded JSON document against format 1 or 2; raises ScenarioError."""
    if not isinstance(data, dict):
        raise ScenarioError(file, None, "a scenario must be a JSON object")
    known_dupes = sorted(set(getattr(data, "duplicates", [])) & _TOP_LEVEL_KEYS)
    if known_dupes:  # unknown top-level keys are ignored, even when repeated
        raise ScenarioError(file, None, f"key(s) {', '.join(known_dupes)} written twice in the top level")
    if "format" not in data:
        raise ScenarioError(file, None, "missing required key `format`")
    if not _is_int(data["format"]) or data["format"] not in FORMAT_VERSIONS:
        raise ScenarioError(
            file, None, f"unsupported `format` {json.dumps(data['format'])} (this reader knows formats 1 and 2)"
        )
    version = data["format"]
    if "steps" not in data:
        raise ScenarioError(file, None, "missing required key `steps`")
    name = data.get("name", Path(file).stem)
    if not isinstance(name, str):
        raise ScenarioError(file, None, f"`name` must be a string, got {json.dumps(name)}")
    source = data.get("source", "")
    if not isinstance(source, str):
        raise ScenarioError(file, None, f"`source` must be a string, got {json.dumps(source)}")
    raw_config = data.get("config", {})
    if version == 1 and isinstance(raw_config, dict) and "store" in raw_config:
        raise ScenarioError(file, None, "`config` key store is format 2 (this file says `format` 1)")
    config = _parse_config(file, raw_config)
    raw_steps = data["steps"]
    if not isinstance(raw_steps, list):
        raise ScenarioError(file, None, f"`steps` must be a list, got {json.dumps(raw_steps)}")
    steps: list[Step] = []
    for index, raw in enumerate(raw_steps):
        try:
            step = parse_step(raw)
        except _Invalid as e:
            raise ScenarioError(file, index, str(e)) from None
        if version == 1:
            feature = _v2_feature(raw)
            if feature is not None:
                raise ScenarioError(file, index, f"{feature} is format 2 (this file says `format` 1)")
        if isinstance(step, Store) and config.store != "deferred":
            raise ScenarioError(file, index, '`store` completes a deferred write: set `config` `store` to "deferred"')
        steps.append(step)
    check_references(file, tuple(steps))
    return Scenario(name=name, source=source, config=config, steps=tuple(steps), file=file)


def loads_scenario(text: str, file: str = "<string>") -> Scenario:
    try:
        data = json.loads(text, object_pairs_hook=_object_pairs, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ScenarioError(file, None, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:
        raise ScenarioError(file, None, f"invalid JSON: {e}") from None
    except RecursionError:
        raise ScenarioError(file, None, "JSON nested deeper than kgc reads (about 1,000 levels)") from None
    return parse_scenario(data, file)


def load_scenario(path: Path | str) -> Scenario:
    """Read and validate a scenario file; raises ScenarioError (also for an unreadable file)."""
    file = str(path)
    try:
        data = read_json(path, object_pairs_hook=_object_pairs)
    except InputError as e:
        raise ScenarioError(file, None, f"{e.place}: {e.message}" if e.place else e.message) from None
    return parse_scenario(data, file)


def shipped_scenarios() -> Path:
    """The scenario files kgc ships (kgc.conformance's package data), so `kgc all` and the
    benchmarks find them from any working folder, not only from a checkout's root."""
    return Path(__file__).resolve().parent / "scenarios"
