"""Run a validated scenario against the Python coordinator (kgc.impl) and check it.

One scenario gets a fresh world: a VirtualClock at 0, a SystemTimer on it, and a
GroupCoordinator with the scenario's config and a fixed member-id seed, so a replay is
deterministic. Requests go in through the coordinator's handlers; responses come back through
callbacks and are kept by request id, whenever they arrive (during the request, or during a
later request or tick that completes a delayed operation). The run stops at the first step
that does not hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kgc.conformance import refs
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
    ScenarioError,
    Step,
    Store,
    Sync,
    Tick,
    Unload,
)

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
#: state object -> its name, filled on first sight (a replay asks for the same few states per step)
_STATE_NAME_SEEN: dict[Any, str] = {}


def state_name(state: Any) -> str:
    """GroupState -> Kafka's state name, whatever spelling the enum uses (Empty, EMPTY, ...)."""
    try:
        return _STATE_NAME_SEEN[state]
    except (KeyError, TypeError):  # not seen yet, or not hashable
        pass
    name = _state_name(state)
    try:
        _STATE_NAME_SEEN[state] = name
    except TypeError:
        pass
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
    return getattr(error, "name", str(error))


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

    def group_view(self, group_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def response_view(self, request: Step, delivered: Any) -> dict[str, Any]:
        raise NotImplementedError

    def describe_response(self, delivered: Any) -> str:
        raise NotImplementedError

    def check_response(self, index: int, step: Expect) -> None:
        request = self.requests[step.request_id]
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
        rest = {k: v for k, v in checks.items() if k != "pending"}
        if not rest:
            return
        if not delivered:
            wanted = ", ".join(f"{k}={_show(v)}" for k, v in rest.items())
            raise _StepFailed(f"{what} with {wanted}", "no response yet")
        seen = self.response_view(request, delivered[0])
        expected_vals: dict[str, Any] = {}
        for key, want in rest.items():
            if key == "leader":
                want = self.resolve(want, index)
            elif key == "members":
                want = sorted(self.resolve(m, index) for m in want)
            expected_vals[key] = want
        _compare(what, expected_vals, seen, lambda: self.describe_response(delivered[0]))

    def check_state(self, index: int, step: ExpectState) -> None:
        seen = self.group_view(step.group)
        expected_vals: dict[str, Any] = {}
        for key, want in step.checks.items():
            if key == "leader":
                want = refs.resolve_optional(want, self.join_answer, self.scenario.file, index)
            elif key == "members":
                want = sorted(set(self.resolve(m, index) for m in want))
            elif key == "static_members":
                want = {instance: self.resolve(m, index) for instance, m in want}
            expected_vals[key] = want
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
        # imported here so that the format (scenario.py) is usable without kgc.impl
        from kgc.conformance.driver import Driver
        from kgc.impl.coordinator import GroupConfig

        cfg = self.scenario.config
        config = GroupConfig(
            min_session_timeout_ms=cfg.min_session_timeout_ms,
            max_session_timeout_ms=cfg.max_session_timeout_ms,
            initial_rebalance_delay_ms=cfg.initial_rebalance_delay_ms,
            max_group_size=cfg.max_group_size,
        )
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

    def _callback(self, request_id: str) -> Callable[[Any], None]:
        def deliver(result: Any) -> None:
            self.responses[request_id].append(result)

        return deliver

    def join_answer(self, request_id: str) -> str | None:
        """refs.JoinAnswers: the member id join `request_id` was given, None while unanswered."""
        delivered = self.responses.get(request_id)
        if not delivered:
            return None
        return delivered[0].member_id or ""

    def resolve(self, ref: Any, index: int) -> str:
        return refs.resolve(ref, self.join_answer, self.scenario.file, index)

    # -- actions -----------------------------------------------------------------------------

    def send(self, index: int, step: Step) -> None:
        if isinstance(step, REQUEST_TYPES):
            member_id = self.resolve(step.member, index)
            self.requests[step.id] = step
            self.responses[step.id] = []
            callback = self._callback(step.id)
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
                [tuple(p) for p in step.protocols],
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
        elif isinstance(step, Heartbeat):
            c.handle_heartbeat(step.group, member_id, step.instance, step.generation, callback)
        elif isinstance(step, Leave):
            c.handle_leave_group(step.group, [_leave_identity(member_id, step.instance)], callback)
        elif isinstance(step, Commit):
            c.handle_commit_offsets(step.group, member_id, step.instance, step.generation, dict(step.offsets), callback)
        elif isinstance(step, Store):
            from kgc.impl.errors import Errors

            if not c.store.complete_next(step.group, Errors.for_name(step.error)):
                raise ScenarioError(
                    self.scenario.file, index, f"`store`: group {step.group!r} has no unfinished write to complete"
                )
        elif isinstance(step, LoadBegin):
            c.on_group_load_begin(step.group)
        elif isinstance(step, Tick):
            self.timer.advance_to(self.clock.now_ms() + step.ms)
        elif isinstance(step, Unload):
            c.on_group_unloaded(step.group)
        elif isinstance(step, Load):
            self.reopen_store()
            c.on_group_loaded(step.group)

    # -- what the shared checks (StepChecks) read ---------------------------------------------

    def response_view(self, request: Step, delivered: Any) -> dict[str, Any]:
        return response_fields(request, delivered)

    def describe_response(self, delivered: Any) -> str:
        return _describe(delivered)

    def group_view(self, group_id: str) -> dict[str, Any]:
        """The coordinator's view of a group in the contract's terms (a group it does not hold
        is Dead, with nothing in it)."""
        c = self.coordinator
        group = c.group(group_id)
        pending_for = getattr(c.store, "pending_for", None)
        record = c.store.load_group(group_id)
        store_view = {
            "unfinished_writes": pending_for(group_id) if pending_for is not None else 0,
            "stored_generation": record.generation_id if record is not None else None,
            "loading": c.is_loading(group_id),
        }
        if group is None:
            return {
                "state": "Dead",
                "generation": None,
                "members": [],
                "leader": None,
                "member_count": 0,
                "pending_count": 0,
                "protocol": None,
                "static_members": {},
                **store_view,
            }
        return {
            "state": state_name(group.state),
            "generation": group.generation_id,
            "members": sorted(group.members),
            "leader": group.leader_id,
            "member_count": len(group.members),
            "pending_count": len(group.pending_members),
            "protocol": group.protocol_name,
            "static_members": {
                m.group_instance_id: m.member_id for m in group.all_member_metadata() if m.group_instance_id is not None
            },
            **store_view,
        }


def _leave_identity(member_id: str, instance: str | None = None) -> Any:
    from kgc.impl.coordinator import LeaveMemberIdentity

    return LeaveMemberIdentity(member_id, instance)


def response_fields(request: Step, result: Any) -> dict[str, Any]:
    """A response in the contract's `expect` keys."""
    if isinstance(request, Join):
        return {
            "error": error_name(result.error),
            "generation": result.generation_id,
            "leader": result.leader_id,
            "member_id_given": bool(result.member_id),
            "members": sorted(m.member_id for m in result.members),
            "protocol": result.protocol_name,
            "skip_assignment": result.skip_assignment,
        }
    if isinstance(request, Sync):
        return {
            "error": error_name(result.error),
            "assignment": result.member_assignment,
            "protocol_type": result.protocol_type,
        }
    if isinstance(request, Commit):
        # One OffsetCommit answers per partition; a scenario's commit gets one error for all
        # of them in Kafka's classic coordinator, so any partition's is the response's.
        return {"error": error_name(next(iter(result.values())))}
    if isinstance(request, Heartbeat):
        return {"error": error_name(result)}
    # Leave: the member's own error where the top-level error is NONE, else the top-level one
    top = error_name(result.error)
    if top == "NONE" and result.member_responses:
        return {"error": error_name(result.member_responses[0][2])}
    return {"error": top}


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


#: After a step that held, what went wrong inside the coordinator meanwhile (a description), or None.
AfterStep = Callable[[int, Step], "str | None"]


def _new_kgc_fault(world: World) -> AfterStep:
    """kgc's own faults: swallowed by the coordinator, but a failed step all the same (conformance/faults.py)."""
    from kgc.conformance.faults import fault_count, new_faults

    def check(index: int, step: Step) -> str | None:
        # counting is cheap; the descriptions are built only once there is a fault
        if fault_count(world.coordinator) == 0:
            return None
        faults = new_faults(world.coordinator, 0)
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
            elif isinstance(step, ExpectState):
                world.check_state(index, step)
            else:
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
