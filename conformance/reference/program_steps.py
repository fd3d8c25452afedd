"""The program steps that let `kgc diff --traces / --random` and `kgc conform --reference kafka`
compare the coordinators between two timers of one instant (issue 21).

A scenario's `tick` fires every timer due by its end, so a run in which a request comes while a
timer is already due, or in which the state between two timers of the same instant matters,
cannot be written as ticks. Programs (made on kgc's side, never written to a scenario file; the
public format is unchanged) therefore say time differently: `Advance` moves the clock without
firing anything, and `Expire` runs exactly one delayed operation, named as Kafka's purgatories
key it (DelayedJoin and DelayedSync by group, DelayedHeartbeat by group and member), whose
deadline is now. kgc's side records them from its own timer expiries in the order they happened
(programs.RequestLog.on_timer); the reference JVM's VirtualTimer and kgc's coordinator
(`send_on_kgc`) each run the named operation of the group they host, or report that none is due.
`PreferLeader` repeats on kgc's replay of a spec trace's program the leader choice the recorder
steered kgc to (abstraction.actions.prefer_leader: Kafka leaves it to HashMap order), so the replay
is the run the program was recorded from; Kafka's side makes its own choice and ignores it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgc.conformance.scenario import Join, MemberRef, Step

__all__ = [
    "KAFKA_OPERATION",
    "Advance",
    "Expire",
    "PreferLeader",
    "answered_members",
    "describe_expiry",
    "send_on_kgc",
]

#: kgc's timer kinds (GroupCoordinator's on_timer) -> the Kafka delayed operation that models them:
#: InitialDelayedJoin is a DelayedJoin watched under GroupJoinKey, a pending member's expiration a
#: DelayedHeartbeat under MemberKey (core/src/main/scala/kafka/coordinator/group/DelayedJoin.scala,
#: DelayedHeartbeat.scala, DelayedSync.scala; GroupCoordinator.scala).
KAFKA_OPERATION = {
    "join": "DelayedJoin",
    "initial_join": "DelayedJoin",
    "heartbeat": "DelayedHeartbeat",
    "pending_member": "DelayedHeartbeat",
    "sync": "DelayedSync",
}


@dataclass(frozen=True)
class Advance:
    """Let `ms` pass without running any timer (Kafka's reaper may lose the race to a request)."""

    ms: int


@dataclass(frozen=True)
class Expire:
    """Run the expiry of the hosted group's `operation` (a KAFKA_OPERATION value) due now;
    `member` (a DelayedHeartbeat's MemberKey) is a member reference like a request's, or, with
    `unanswered`, a member no delivered JoinGroup response names yet (its join is parked, so
    neither side's client has seen its id): the first such member's DelayedHeartbeat due now."""

    operation: str
    group: str
    member: MemberRef | None = None
    unanswered: bool = False


@dataclass(frozen=True)
class PreferLeader:
    """kgc's side only: put `member` (kgc's literal id, the same on every replay of the program:
    ids come from a seeded generator) first in the group's member order, as the recorder did
    before the spec step that elects it, so kgc elects it whenever it is a candidate."""

    group: str
    member: str


def describe_expiry(step: Expire) -> str:
    """DelayedHeartbeat(g, @j3): the operation with its purgatory key."""
    member = "?" if step.unanswered else step.member
    key = step.group if member is None else f"{step.group}, {member}"
    return f"{step.operation}({key})"


def send_on_kgc(world: Any, index: int, step: Step | Advance | Expire | PreferLeader) -> bool | None:
    """One program step on kgc's coordinator (a replay.World): the scenario steps as World.send
    runs them; Advance sets the virtual clock without running the timer; PreferLeader reorders
    the group's members; Expire runs the named operation and says whether one was due (None for
    any other step)."""
    if isinstance(step, Advance):
        world.clock.set_ms(world.clock.now_ms() + step.ms)
        return None
    if isinstance(step, PreferLeader):
        _prefer(world.coordinator.group(step.group), step.member)
        return None
    if isinstance(step, Expire):
        member = None if step.member is None else world.resolve(step.member, index)
        op = _due_operation(world, step, member, answered_members(world) if step.unanswered else None)
        if op is None:
            return False
        op.run()
        return True
    world.send(index, step)
    return None


def _prefer(group: Any, member_id: str) -> None:
    """abstraction.actions.prefer_leader on a group object: `member_id` first, the rest in order."""
    if group is None or member_id not in group.members or next(iter(group.members)) == member_id:
        return
    members = group.members
    first = members.pop(member_id)
    rest = list(members.items())
    members.clear()
    members[member_id] = first
    members.update(rest)


def answered_members(world: Any) -> set[str]:
    """The member ids the JoinGroup responses delivered so far gave (kgc's World or the reference's)."""
    joins = [rid for rid, request in world.requests.items() if isinstance(request, Join)]
    return {m for m in (world.join_answer(rid) for rid in joins) if m}


def _due_operation(world: Any, step: Expire, member_id: str | None, answered: set[str] | None) -> Any:
    """The first live operation (deadline, add order) of the hosted group with the step's key
    and a deadline of now (`answered`: of a member not among those ids). An operation held for
    an unloaded group object is not it: Kafka and kgc both keep those in the timer, where they
    expire doing nothing."""
    group = world.coordinator.group(step.group)
    if group is None:
        return None
    now = world.clock.now_ms()
    for op in world.timer.live_tasks():
        if op.deadline_ms() > now:
            break
        if (
            op.deadline_ms() == now
            and getattr(op, "group", None) is group
            and KAFKA_OPERATION.get(getattr(op, "timer_kind", "")) == step.operation
            and (
                getattr(op, "timer_member_id", None) == member_id
                if answered is None
                else getattr(op, "timer_member_id", None) not in answered
            )
        ):
            return op
    return None
