"""Run a validated scenario against the Python coordinator (kgc.impl) and check it.

One scenario gets a fresh world: a VirtualClock at 0, a SystemTimer on it, and a
GroupCoordinator with the scenario's config and a fixed member-id seed, so a replay is
deterministic. Requests go in through the coordinator's handlers; responses come back through
callbacks and are kept by request id, whenever they arrive (during the request, or during a
later request or tick that completes a delayed operation). The run stops at the first step
that does not hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kgc.conformance import refs
from kgc.conformance.driver import Driver
from kgc.conformance.faults import fault_count, new_faults
from kgc.conformance.scenario import (
    REQUEST_TYPES,
    STATE_NAMES,
    Commit,
    Expect,
    ExpectState,
    Heartbeat,
    Join,
    Leave,
    Load,
    LoadBegin,
    Scenario,
    ScenarioConfig,
    ScenarioError,
    Step,
    Store,
    Sync,
    Tick,
    Unload,
)
from kgc.impl.coordinator import GroupConfig, LeaveMemberIdentity
from kgc.impl.errors import Errors

MEMBER_ID_SEED = 0
CLIENT_HOST = "localhost"


@dataclass(frozen=True)
class StepFailure:
    """The first step that did not hold."""

    step: int
    expected: str
    seen: str

    def __str__(self) -> str:
        return f"step {self.step}: expected {self.expected}; seen {self.seen}"


@dataclass(frozen=True)
class ReplayResult:
    name: str
    file: str
    failure: StepFailure | None = None

    @property
    def passed(self) -> bool:
        return self.failure is None


class _StepFailed(Exception):
    def __init__(self, expected: str, seen: str) -> None:
        super().__init__(expected, seen)
        self.expected = expected
        self.seen = seen


#: Called before each step with (index, step, world); the coverage test uses it to see the
#: group's state at every request without the runner knowing about coverage.
BeforeStep = Callable[[int, Step, "World"], None]


_STATE_NAMES_BY_KEY = {s.lower(): s for s in STATE_NAMES}
#: id(state) -> (state, its name), filled on first sight (a replay asks for the same few states
#: per step). Keyed by id, not by the state: hashing an Enum member runs Enum.__hash__, a Python
#: function; the entry holds the state itself, so its id is not reused while the entry lives.
_STATE_NAME_SEEN: dict[int, tuple[Any, str]] = {}


def state_name(state: Any) -> str:
    """GroupState -> Kafka's state name, whatever spelling the enum uses (Empty, EMPTY, ...)."""
    seen = _STATE_NAME_SEEN.get(id(state))
    if seen is not None and seen[0] is state:
        return seen[1]
    name = _state_name(state)
    _STATE_NAME_SEEN[id(state)] = (state, name)
    return name


def _state_name(state: Any) -> str:
    wanted = _STATE_NAMES_BY_KEY
    for candidate in (getattr(state, "name", None), getattr(state, "value", None), str(state)):
        if isinstance(candidate, str):
            key = candidate.split(".")[-1].replace("_", "").lower()
            if key in wanted:
                return wanted[key]
    return str(state)


def error_name(error: Any) -> str:
    try:
        return error._name_  # an Enum member's name, without the `name` property's Python frame
    except AttributeError:
        pass
    try:
        return error.name
    except AttributeError:  # an error given by its name already (or anything else): as text
        return str(error)


#: The check keys whose values name members (resolved before comparing), and `pending` (no
#: value to compare): every other key's value is compared as written, without a call.
_RESOLVED_KEYS = frozenset({"leader", "members", "static_members", "pending"})


class StepChecks:
    """The `expect` and `expect_state` checks of a scenario, one implementation for every
    coordinator a scenario runs on (kgc's World here, Kafka's ReferenceWorld in
    conformance/reference): a runner holds `scenario`, `requests`, `responses` (by request id),
    `resolve`, `join_answer`, `group_view`, and says how a delivered response reads in the
    contract's keys (`response_view`) and how it is shown in a failure (`describe_response`)."""

    scenario: Scenario
    requests: dict[str, Step]
    responses: dict[str, list[Any]]

    def send(self, index: int, step: Step) -> None:
        raise NotImplementedError

    def resolve(self, ref: Any, index: int) -> str:
        raise NotImplementedError

    def join_answer(self, request_id: str) -> str | None:
        raise NotImplementedError

    def group_view(self, group_id: str, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """`keys`: the only keys the caller reads (a runner may return more)."""
        raise NotImplementedError

    def response_view(self, request: Step, delivered: Any, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """`keys`: the only keys the caller reads (a runner may return more)."""
        raise NotImplementedError

    def describe_response(self, delivered: Any) -> str:
        raise NotImplementedError

    def check_response(self, index: int, step: Expect) -> None:
        """The passing path compares only the keys the step names, and builds no message: a
        replay's steps are half checks, and nearly all of them pass."""
        delivered = self.responses[step.request_id]
        checks = step.checks
        if len(delivered) > 1 or "pending" in checks or not delivered:
            self._check_delivery(index, step)
            if not delivered:
                return  # pending, as the step expected (else _check_delivery raised)
        if checks:
            seen = self.response_view(self.requests[step.request_id], delivered[0], checks)
            for key, want in checks.items():
                if key in _RESOLVED_KEYS:
                    if key == "pending":
                        continue
                    want = self._wanted_in_response(key, want, index)
                if want != seen.get(key):
                    self._fail_response(index, step)

    def _wanted_in_response(self, key: str, want: Any, index: int) -> Any:
        """An `expect` check's value with its member references resolved."""
        if key == "leader":
            return self.resolve(want, index)
        if key == "members":
            return sorted(self.resolve(m, index) for m in want)
        return want

    def _check_delivery(self, index: int, step: Expect) -> None:
        """More than one response, or a `pending` check, or nothing delivered yet."""
        delivered = self.responses[step.request_id]
        checks = step.checks
        what = f"response to {step.request_id!r}"
        if len(delivered) > 1:
            shown = "; ".join(self.describe_response(r) for r in delivered)
            raise _StepFailed(f"one {what}", f"{len(delivered)} responses: {shown}")
        if "pending" in checks:
            if checks["pending"] and delivered:
                raise _StepFailed(f"{what} pending", f"delivered: {self.describe_response(delivered[0])}")
            if not checks["pending"] and not delivered:
                raise _StepFailed(f"{what} delivered", "no response yet")
        if not delivered and any(k != "pending" for k in checks):
            wanted = ", ".join(f"{k}={_show(v)}" for k, v in checks.items() if k != "pending")
            raise _StepFailed(f"{what} with {wanted}", "no response yet")

    def _fail_response(self, index: int, step: Expect) -> None:
        """Raise the failure of a delivered response that does not match, naming every wrong key."""
        delivered = self.responses[step.request_id]
        seen = self.response_view(self.requests[step.request_id], delivered[0])
        expected_vals = {k: self._wanted_in_response(k, v, index) for k, v in step.checks.items() if k != "pending"}
        _compare(f"response to {step.request_id!r}", expected_vals, seen, lambda: self.describe_response(delivered[0]))

    def check_state(self, index: int, step: ExpectState) -> None:
        checks = step.checks
        seen = self.group_view(step.group, checks)
        for key, want in checks.items():
            if key in _RESOLVED_KEYS:
                want = self._wanted_in_state(key, want, index)
            if want != seen.get(key):
                self._fail_state(index, step)

    def _wanted_in_state(self, key: str, want: Any, index: int) -> Any:
        """An `expect_state` check's value with its member references resolved."""
        if key == "leader":
            return refs.resolve_optional(want, self.join_answer, self.scenario.file, index)
        if key == "members":
            return sorted(set(self.resolve(m, index) for m in want))
        if key == "static_members":
            return {instance: self.resolve(m, index) for instance, m in want}
        return want

    def _fail_state(self, index: int, step: ExpectState) -> None:
        """Raise the failure of a group that does not match, naming every wrong key."""
        seen = self.group_view(step.group)
        expected_vals = {k: self._wanted_in_state(k, v, index) for k, v in step.checks.items()}
        _compare(f"group {step.group!r}", expected_vals, seen, None)


@dataclass
class World(StepChecks):
    """The coordinator under test plus what the scenario has seen of it so far."""

    scenario: Scenario
    observer: Any = None
    coordinator_class: Any = None  # a GroupCoordinator subclass (seeded bugs); None: the real one
    clock: Any = None
    timer: Any = None
    coordinator: Any = None
    requests: dict[str, Step] = field(default_factory=dict)
    responses: dict[str, list[Any]] = field(default_factory=dict)
    store_path: Any = None  # a file: the group store is a FileGroupStore there

    def __post_init__(self) -> None:
        cfg = self.scenario.config
        config = _group_config(cfg)
        store = None
        if self.store_path is not None:
            from kgc.impl.durable_store import FileGroupStore

            store = FileGroupStore(self.store_path)
        if cfg.store == "deferred":
            from kgc.impl.store import DeferredGroupStore, InMemoryGroupStore

            # Writes wait for the scenario's `store` steps, as Kafka's wait for the append.
            store = DeferredGroupStore(store if store is not None else InMemoryGroupStore())
        driver = Driver(
            config, self.coordinator_class, store=store, member_id_seed=MEMBER_ID_SEED, listeners=(self.observer,)
        )
        self.clock, self.timer, self.coordinator = driver.clock, driver.timer, driver.coordinator

    def reopen_store(self) -> None:
        """A `load` on a durable store reads the group back from disk, as a coordinator taking
        the partition over does: the file is closed and recovered, not read from memory."""
        if self.store_path is not None:
            from kgc.impl.durable_store import FileGroupStore
            from kgc.impl.store import DeferredGroupStore

            store = self.coordinator.store
            store.close()
            if isinstance(store, DeferredGroupStore):
                store.inner = FileGroupStore(self.store_path)
            else:
                self.coordinator.store = FileGroupStore(self.store_path)

    def close(self) -> None:
        if self.store_path is not None:
            self.coordinator.store.close()

    # -- responses ---------------------------------------------------------------------------

    def join_answer(self, request_id: str) -> str | None:
        """refs.JoinAnswers: the member id join `request_id` was given, None while unanswered."""
        delivered = self.responses.get(request_id)
        if not delivered:
            return None
        return delivered[0].member_id or ""

    def resolve(self, ref: Any, index: int) -> str:
        if type(ref) is str:  # a literal member id
            return ref
        # `@a1`: join_answer read here rather than through refs.resolve (one frame fewer per
        # reference, four in five of them answered in the shipped scenarios)
        member_id = self.join_answer(ref.request_id)
        if member_id is None:
            raise refs.unanswered(ref, self.scenario.file, index)
        return member_id

    # -- actions -----------------------------------------------------------------------------

    def send(self, index: int, step: Step) -> None:
        if isinstance(step, REQUEST_TYPES):
            member_id = self.resolve(step.member, index)  # type: ignore[union-attr]
            self.requests[step.id] = step  # type: ignore[union-attr]
            # a response is delivered by appending it to the request's list: a bound list.append
            # is the callback, no Python frame per delivery
            delivered: list[Any] = []
            self.responses[step.id] = delivered  # type: ignore[union-attr]
            callback = delivered.append
        c = self.coordinator
        if isinstance(step, Join):
            c.handle_join_group(
                step.group,
                member_id,
                step.instance,
                step.require_known_member,
                step.client,
                CLIENT_HOST,
                step.rebalance_timeout_ms,
                step.session_timeout_ms,
                step.protocol_type,
                list(step.protocols),  # (name, metadata) tuples already (scenario.py)
                callback,
                supports_skip_assignment=step.supports_skip_assignment,
            )
        elif isinstance(step, Sync):
            assignment = {self.resolve(k, index): v for k, v in step.assignment}
            c.handle_sync_group(
                step.group,
                step.generation,
                member_id,
                step.protocol_type,
                step.protocol,
                step.instance,
                assignment,
                callback,
            )
        elif isinstance(step, Tick):  # third: as common as a sync in the shipped scenarios
            self.timer.advance_to(self.clock.now_ms() + step.ms)
        elif isinstance(step, Heartbeat):
            c.handle_heartbeat(step.group, member_id, step.instance, step.generation, callback)
        elif isinstance(step, Leave):
            c.handle_leave_group(step.group, [_leave_identity(member_id, step.instance)], callback)
        elif isinstance(step, Commit):
            c.handle_commit_offsets(step.group, member_id, step.instance, step.generation, dict(step.offsets), callback)
        elif isinstance(step, Store):
            if not c.store.complete_next(step.group, Errors.for_name(step.error)):
                raise ScenarioError(
                    self.scenario.file, index, f"`store`: group {step.group!r} has no unfinished write to complete"
                )
        elif isinstance(step, LoadBegin):
            c.on_group_load_begin(step.group)
        elif isinstance(step, Unload):
            c.on_group_unloaded(step.group)
        elif isinstance(step, Load):
            self.reopen_store()
            c.on_group_loaded(step.group)

    # -- the shared checks' passing paths, without building a view -----------------------------

    def check_response(self, index: int, step: Expect) -> None:
        """StepChecks.check_response, reading each named key straight from the response: a
        third of a replay's steps are expects, and building the response's view (three Python
        frames and a dict) cost about as much as the comparisons. A failure, or a delivery
        that is not exactly one response or a `pending` check, takes the shared path."""
        delivered = self.responses[step.request_id]
        checks = step.checks
        if len(delivered) != 1 or "pending" in checks:
            StepChecks.check_response(self, index, step)
            return
        result = delivered[0]
        request = self.requests[step.request_id]
        fields = _RESPONSE_FIELDS.get(type(request))
        for key, want in checks.items():
            if key in _RESOLVED_KEYS:
                want = self._wanted_in_response(key, want, index)
            if fields is None:  # a heartbeat, commit or leave: the error is its one key
                seen = _one_error(request, result) if key == "error" else None
            else:
                getter = fields.get(key)
                seen = getter(result) if getter is not None else None
            if want != seen:
                self._fail_response(index, step)

    def check_state(self, index: int, step: ExpectState) -> None:
        """StepChecks.check_state, reading each named key straight from the coordinator (as
        group_view would) and comparing it at once."""
        c = self.coordinator
        group_id = step.group
        group = c.group(group_id)
        for key, want in step.checks.items():
            if key in _RESOLVED_KEYS:
                want = self._wanted_in_state(key, want, index)
            store_field = _STORE_FIELDS.get(key)
            if store_field is not None:
                seen = store_field(c, group_id)
            elif key in _DEAD_GROUP:
                seen = _DEAD_GROUP[key] if group is None else _GROUP_FIELDS[key](group)
            else:
                seen = None
            if want != seen:
                self._fail_state(index, step)

    # -- what the shared checks (StepChecks) read ---------------------------------------------

    def response_view(self, request: Step, delivered: Any, keys: Iterable[str] | None = None) -> dict[str, Any]:
        return response_fields(request, delivered, keys)

    def describe_response(self, delivered: Any) -> str:
        return _describe(delivered)

    def group_view(self, group_id: str, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """The coordinator's view of a group in the contract's terms (a group it does not hold
        is Dead, with nothing in it); with `keys`, only those (an `expect_state` names two or
        three of the eleven, and the store's need a lookup each)."""
        c = self.coordinator
        group = c.group(group_id)
        if keys is None:
            keys = _GROUP_KEYS
        view: dict[str, Any] = {}
        for key in keys:
            store_field = _STORE_FIELDS.get(key)
            if store_field is not None:
                view[key] = store_field(c, group_id)
            elif key in _DEAD_GROUP:
                view[key] = _DEAD_GROUP[key] if group is None else _GROUP_FIELDS[key](group)
        return view


#: id(scenario config) -> (that config, its GroupConfig): a replay builds one World per scenario
#: run, and building a frozen GroupConfig costs as much as a scenario step's checks. Keyed by id
#: (a ScenarioConfig's hash and == are Python functions); the entry holds the config, so its id
#: is not reused while the entry lives. Emptied when full: runs of generated scenarios (fuzz)
#: make configs without end.
_GROUP_CONFIGS: dict[int, tuple[ScenarioConfig, GroupConfig]] = {}
_GROUP_CONFIGS_MAX = 1024


def _group_config(cfg: ScenarioConfig) -> GroupConfig:
    """The coordinator's settings for a scenario's `config`."""
    hit = _GROUP_CONFIGS.get(id(cfg))
    if hit is not None and hit[0] is cfg:
        return hit[1]
    config = GroupConfig(
        min_session_timeout_ms=cfg.min_session_timeout_ms,
        max_session_timeout_ms=cfg.max_session_timeout_ms,
        initial_rebalance_delay_ms=cfg.initial_rebalance_delay_ms,
        max_group_size=cfg.max_group_size,
    )
    if len(_GROUP_CONFIGS) >= _GROUP_CONFIGS_MAX:
        _GROUP_CONFIGS.clear()
    _GROUP_CONFIGS[id(cfg)] = (cfg, config)
    return config


#: An expect_state's keys: the group's own, read from its GroupMetadata ...
_GROUP_FIELDS: dict[str, Callable[[Any], Any]] = {
    "state": lambda g: state_name(g.state),
    "generation": lambda g: g.generation_id,
    "members": lambda g: sorted(g.members),
    "leader": lambda g: g.leader_id,
    "member_count": lambda g: len(g.members),
    "pending_count": lambda g: len(g.pending_members),
    "protocol": lambda g: g.protocol_name,
    "static_members": lambda g: {
        m.group_instance_id: m.member_id for m in g.all_member_metadata() if m.group_instance_id is not None
    },
}
#: ... and what they are for a group the coordinator does not hold (Dead, nothing in it) ...
_DEAD_GROUP: dict[str, Any] = {
    "state": "Dead",
    "generation": None,
    "members": [],
    "leader": None,
    "member_count": 0,
    "pending_count": 0,
    "protocol": None,
    "static_members": {},
}


def _unfinished_writes(c: Any, group_id: str) -> int:
    pending_for = getattr(c.store, "pending_for", None)
    return pending_for(group_id) if pending_for is not None else 0


def _stored_generation(c: Any, group_id: str) -> int | None:
    record = c.store.load_group(group_id)
    return record.generation_id if record is not None else None


#: ... and the store's, whether or not the coordinator holds the group.
_STORE_FIELDS: dict[str, Callable[[Any, str], Any]] = {
    "unfinished_writes": _unfinished_writes,
    "stored_generation": _stored_generation,
    "loading": lambda c, group_id: c.is_loading(group_id),
}
_GROUP_KEYS = (*_GROUP_FIELDS, *_STORE_FIELDS)


def _leave_identity(member_id: str, instance: str | None = None) -> Any:
    return LeaveMemberIdentity(member_id, instance)


def response_fields(request: Step, result: Any, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """A response in the contract's `expect` keys; with `keys`, only those a join or a sync
    has (an `expect` names two or three)."""
    fields = _RESPONSE_FIELDS.get(type(request))
    if fields is None:
        return {"error": _one_error(request, result)}
    if keys is None:
        keys = fields
    return {key: fields[key](result) for key in keys if key in fields}


def _one_error(request: Step, result: Any) -> str:
    """A heartbeat's, commit's or leave's response: its error, the one `expect` key it has."""
    if isinstance(request, Commit):
        # One OffsetCommit answers per partition; a scenario's commit gets one error for all
        # of them in Kafka's classic coordinator, so any partition's is the response's.
        return error_name(next(iter(result.values())))
    if isinstance(request, Heartbeat):
        return error_name(result)
    # Leave: the member's own error where the top-level error is NONE, else the top-level one
    top = error_name(result.error)
    if top == "NONE" and result.member_responses:
        return error_name(result.member_responses[0][2])
    return top


_RESPONSE_FIELDS: dict[type, dict[str, Callable[[Any], Any]]] = {
    Join: {
        "error": lambda r: error_name(r.error),
        "generation": lambda r: r.generation_id,
        "leader": lambda r: r.leader_id,
        "member_id_given": lambda r: bool(r.member_id),
        "members": lambda r: sorted(m.member_id for m in r.members),
        "protocol": lambda r: r.protocol_name,
        "skip_assignment": lambda r: r.skip_assignment,
    },
    Sync: {
        "error": lambda r: error_name(r.error),
        "assignment": lambda r: r.member_assignment,
        "protocol_type": lambda r: r.protocol_type,
    },
}


def _show(v: Any) -> str:
    return "null" if v is None else repr(v) if isinstance(v, str) else str(v)


def _describe(result: Any) -> str:
    if hasattr(result, "error"):
        fields = {k: v for k, v in vars(result).items()} if hasattr(result, "__dict__") else {}
        if not fields and hasattr(result, "__dataclass_fields__"):
            fields = {k: getattr(result, k) for k in result.__dataclass_fields__}
        parts = []
        for k, v in fields.items():
            if k == "members":
                v = [getattr(m, "member_id", m) for m in v]
            parts.append(f"{k}={error_name(v) if k == 'error' else v!r}")
        return "(" + ", ".join(parts) + ")" if parts else repr(result)
    return error_name(result)


def _compare(what: str, expected: dict[str, Any], seen: dict[str, Any], shown: Callable[[], str] | None) -> None:
    """Fail with the keys whose value is not the expected one; `shown` describes the whole
    response (called only on a failure: describing every passing response cost a replay a
    tenth of its time)."""
    wrong = [k for k in expected if expected[k] != seen.get(k)]
    if wrong:
        exp = ", ".join(f"{k}={_show(expected[k])}" for k in wrong)
        got = ", ".join(f"{k}={_show(seen.get(k))}" for k in wrong)
        if shown is not None:
            got += f" in {shown()}"
        raise _StepFailed(f"{what} with {exp}", got)


def run_scenario(
    scenario: Scenario,
    before_step: BeforeStep | None = None,
    observer: Any = None,
    coordinator_class: Any = None,
    store_path: Any = None,
) -> ReplayResult:
    """Run every step in order; PASS, or FAIL at the first step that did not hold. Raises
    ScenarioError when a member reference is used before its join has been answered.
    `store_path`: keep group metadata in a FileGroupStore there (kgc replay --durable-store)."""
    world = World(scenario, observer=observer, coordinator_class=coordinator_class, store_path=store_path)
    try:
        return _run_steps(scenario, world, before_step)
    finally:
        world.close()


#: After a step that held and called the coordinator (a request, tick or store step; not a check,
#: which only reads it): what went wrong inside the coordinator meanwhile (a description), or None.
AfterStep = Callable[[int, Step], "str | None"]


def _new_kgc_fault(world: World) -> AfterStep:
    """kgc's own faults: swallowed by the coordinator, but a failed step all the same (conformance/faults.py)."""
    coordinator = world.coordinator
    counts_directly = hasattr(coordinator, "internal_errors") and hasattr(coordinator, "duplicate_answers")

    def check(index: int, step: Step) -> str | None:
        # counting is cheap (a GroupCoordinator's two counters read directly, as fault_count
        # would); the descriptions are built only once there is a fault
        if counts_directly:
            if not coordinator.internal_errors and not coordinator.duplicate_answers:
                return None
        elif fault_count(coordinator) == 0:
            return None
        faults = new_faults(coordinator, 0)
        return faults[0] if faults else None

    return check


def _run_steps(scenario: Scenario, world: World, before_step: BeforeStep | None) -> ReplayResult:
    return run_steps(scenario, world, before_step, _new_kgc_fault(world))


def run_steps(
    scenario: Scenario,
    world: StepChecks,
    before_step: Callable[[int, Step, Any], None] | None = None,
    after_step: AfterStep | None = None,
) -> ReplayResult:
    """Every step in order on `world` (kgc's World or Kafka's ReferenceWorld, anything with
    `send` and the StepChecks): PASS, or FAIL at the first step that did not hold. A runner
    that raised handling a step failed that step (it is not a bad file); a ScenarioError (a
    member reference used before its join was answered) is the file's fault and propagates."""
    for index, step in enumerate(scenario.steps):
        if before_step is not None:
            before_step(index, step, world)
        try:
            if isinstance(step, Expect):
                world.check_response(index, step)
                continue
            if isinstance(step, ExpectState):
                world.check_state(index, step)
                continue
            world.send(index, step)
        except _StepFailed as f:
            return ReplayResult(scenario.name, scenario.file, StepFailure(index, f.expected, f.seen))
        except refs.ScenarioError:
            raise
        except Exception as e:  # the coordinator broke: that is a failed step, not a bad file
            return ReplayResult(
                scenario.name,
                scenario.file,
                StepFailure(index, f"{_step_kind(step)} handled", f"{type(e).__name__}: {e}"),
            )
        # only after a step that calls the coordinator: a check reads it and calls no handler,
        # so it cannot make a fault (and half the steps are checks)
        fault = after_step(index, step) if after_step is not None else None
        if fault is not None:
            return ReplayResult(
                scenario.name,
                scenario.file,
                StepFailure(index, f"{_step_kind(step)} handled without a fault", fault),
            )
    return ReplayResult(scenario.name, scenario.file)


def _step_kind(step: Step) -> str:
    if isinstance(step, Expect):
        return f"expect {step.request_id!r}"
    if isinstance(step, ExpectState):
        return f"expect_state {step.group!r}"
    return type(step).__name__.lower()
