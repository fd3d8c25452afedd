"""The spec's constants and names as the abstraction uses them: units, ids, variables, the
timer steps, and SpecConstants read from a model's .cfg or a trace's #meta."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgc.impl.coordinator import (
    GroupConfig,
)
from kgc.spec.values import ModelValue, TlaValue, parse_value

GROUP_ID = "g"
CLIENT_HOST = "localhost"
PROTOCOL_TYPE = "consumer"
PROTOCOL_NAME = "range"
NO_MEMBER = 0
NO_GEN = -1
PLAN_PREFIX = "plan:"

#: The spec's variables in its `vars` order, without lastAction (the action, not state).
SPEC_VARIABLES: tuple[str, ...] = (
    "now",
    "timers",
    "loaded",
    "gstate",
    "generation",
    "leader",
    "members",
    "pending",
    "awaitingJoin",
    "awaitingSync",
    "newMembers",
    "pendingSync",
    "plan",
    "newMemberAdded",
    "mtimeouts",
    "nextId",
    "store",
    "failovers",
    "cphase",
    "cmember",
    "cgen",
    "cleader",
    "cmembers",
    "cassign",
    "cwait",
    "genLeaders",
    "genMembers",
    "leaderLog",
    "writes",
    "staticMembers",
    "minstance",
    "storeStatic",
    "loading",
    "protocol",
    "mprotocols",
    "ackLog",
)

#: MCGroupCoordinator's protocol lists (protocols.cfg: RoundRobinClient, StickyClient, others)
MC_ROUND_ROBIN_PROTOCOLS = ("roundrobin", "range")
MC_STICKY_PROTOCOLS = ("sticky",)
MC_OTHER_PROTOCOLS = ("cooperative-sticky", "range", "roundrobin")

#: Spec actions that are one timer firing (SystemTimer.fire_next()).
TIMER_STEPS = frozenset(
    {
        "SessionTimeoutExpiry",
        "NewMemberJoinTimeout",
        "PendingMemberExpiry",
        "RebalanceTimeout",
        "InitialDelayedJoin",
        "DelayedSyncExpiry",
        "StaleTimerExpiry",
    }
)


class AbstractionError(Exception):
    """The implementation state has no spec counterpart (e.g. a deadline that is not a whole
    number of spec units): a driver or set-up mistake, not a protocol divergence."""


class UnknownAction(AbstractionError):
    """A lastAction name this mapping does not know: the spec grew an action."""


# ----------------------------------------------------------------------------------------------
# Constants
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecConstants:
    """The model constants the mapping needs. Durations are in spec units."""

    clients: tuple[str, ...]
    num_ids: int
    session: int
    rebalance: int
    initial_delay: int
    new_member_timeout: int
    max_group_size: int | None
    max_failovers: int
    normalize: bool = False
    bug: str = "none"
    ms_per_unit: int = 1000
    store_async: bool = False
    """The spec's StoreAsync: group-metadata appends wait for StoreCallback steps (the world
    runs a DeferredGroupStore)."""
    #: (client, session, rebalance) for clients whose JoinGroups carry other timeouts than
    #: Session and Rebalance (the spec's SessionOf / RebalanceOf overridden)
    client_timeouts: tuple[tuple[str, int, int], ...] = ()
    #: the spec's Instances: each group.instance.id as the sorted clients configured with it
    #: (two clients sharing one are a restarted consumer and its zombie); others are dynamic
    instances: tuple[tuple[str, ...], ...] = ()
    #: (client, protocol names in preference order) for clients whose JoinGroups carry other
    #: protocols than the one PROTOCOL_NAME (the spec's ProtocolsOf overridden)
    client_protocols: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def protocols_of(self, client: str) -> tuple[str, ...]:
        """The protocol names client sends in every JoinGroup, most preferred first."""
        for name, protocols in self.client_protocols:
            if name == client:
                return protocols
        return (PROTOCOL_NAME,)

    def protocol_order(self) -> tuple[str, ...]:
        """The spec's ProtocolOrder: every protocol name in use, in ascending string order
        (the vote's tie-break, the implementation's too)."""
        return tuple(sorted({PROTOCOL_NAME} | {p for _, ps in self.client_protocols for p in ps}))

    def instance_of(self, client: str) -> tuple[str, ...] | None:
        """The instance (spec's InstanceOf) client belongs to, None for a dynamic client."""
        for instance in self.instances:
            if client in instance:
                return instance
        return None

    def instance_id_of(self, client: str) -> str | None:
        """The group.instance.id client sends (None: a dynamic client)."""
        instance = self.instance_of(client)
        return instance_id(instance) if instance is not None else None

    def ms(self, units: int) -> int:
        return units * self.ms_per_unit

    def timeouts_of(self, client: str) -> tuple[int, int]:
        """The (session, rebalance) timeouts, in spec units, client sends in every JoinGroup."""
        for name, session, rebalance in self.client_timeouts:
            if name == client:
                return session, rebalance
        return self.session, self.rebalance

    def group_config(self) -> GroupConfig:
        """Broker settings equal to the model's; session bounds wide enough for any model."""
        return GroupConfig(
            min_session_timeout_ms=1,
            max_session_timeout_ms=max(
                [self.ms(self.session), 1800000] + [self.ms(s) for _, s, _ in self.client_timeouts]
            ),
            initial_rebalance_delay_ms=self.ms(self.initial_delay),
            max_group_size=self.max_group_size,
            new_member_join_timeout_ms=self.ms(self.new_member_timeout),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "clients": list(self.clients),
            "num_ids": self.num_ids,
            "session": self.session,
            "rebalance": self.rebalance,
            "initial_delay": self.initial_delay,
            "new_member_timeout": self.new_member_timeout,
            "max_group_size": self.max_group_size,
            "max_failovers": self.max_failovers,
            "normalize": self.normalize,
            "bug": self.bug,
            "ms_per_unit": self.ms_per_unit,
            "store_async": self.store_async,
            "client_timeouts": [list(t) for t in self.client_timeouts],
            "instances": [list(i) for i in self.instances],
            "client_protocols": [[c, list(ps)] for c, ps in self.client_protocols],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpecConstants:
        timeouts = tuple((str(c), int(s), int(r)) for c, s, r in data.get("client_timeouts", ()))
        instances = tuple(tuple(str(c) for c in i) for i in data.get("instances", ()))
        protocols = client_protocols_from_json(data.get("client_protocols", ()))
        return cls(
            **{
                **data,
                "clients": tuple(data["clients"]),
                "client_timeouts": timeouts,
                "instances": instances,
                "client_protocols": protocols,
            }
        )

    @classmethod
    def from_cfg_text(cls, text: str, ms_per_unit: int = 1000) -> SpecConstants:
        """From a TLC model config's CONSTANTS section (the `Name = value` lines)."""
        values = cfg_constants(text)

        def need(name: str) -> Any:
            if name not in values:
                raise AbstractionError(f"the model does not set the constant {name}")
            return values[name]

        clients = need("Clients")
        slow = values.get("SlowClient")  # MCGroupCoordinator's client with its own timeouts
        client_timeouts: tuple[tuple[str, int, int], ...] = ()
        if slow is not None and str(slow) != "NoClient":
            client_timeouts = (
                (
                    str(slow),
                    int(values.get("SlowSession", need("Session"))),
                    int(values.get("SlowRebalance", need("Rebalance"))),
                ),
            )
        return cls(
            client_timeouts=client_timeouts,
            client_protocols=_mc_client_protocols(values, clients),
            clients=tuple(sorted(str(c) for c in clients)),
            num_ids=int(need("NumIds")),
            session=int(need("Session")),
            rebalance=int(need("Rebalance")),
            initial_delay=int(need("InitialDelay")),
            new_member_timeout=int(need("NewMemberTimeout")),
            max_group_size=int(need("MaxGroupSize")),
            max_failovers=int(need("MaxFailovers")),
            normalize=bool(values.get("Normalize", False)),
            bug=str(values.get("Bug", "none")),
            ms_per_unit=ms_per_unit,
            store_async=bool(values.get("StoreAsync", False)),
            instances=tuple(sorted(tuple(sorted(str(c) for c in i)) for i in values.get("Instances", ()))),
        )

    @classmethod
    def from_cfg(cls, path: Path, ms_per_unit: int = 1000) -> SpecConstants:
        return cls.from_cfg_text(Path(path).read_text(encoding="utf-8"), ms_per_unit)

    @classmethod
    def from_model(cls, name: str, ms_per_unit: int = 1000) -> SpecConstants:
        from kgc.spec.catalog import resolve_model

        return cls.from_cfg(resolve_model(name).config, ms_per_unit)

    def properties_constants(self) -> Any:
        """The same constants for kgc.conformance.properties."""
        from kgc.conformance.properties import Constants

        return Constants(
            num_ids=self.num_ids,
            max_group_size=self.max_group_size,
            max_failovers=self.max_failovers,
            clients=frozenset(ModelValue(c) for c in self.clients),
            static_clients=frozenset(ModelValue(c) for i in self.instances for c in i),
        )


def client_protocols_from_json(data: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """SpecConstants.client_protocols from its JSON form ([[client, [name, ...]], ...])."""
    return tuple((str(c), tuple(str(p) for p in ps)) for c, ps in data)


def _mc_client_protocols(values: Mapping[str, Any], clients: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """MCGroupCoordinator's MCProtocolsOf when a model sets RoundRobinClient (protocols.cfg)."""
    round_robin, sticky = values.get("RoundRobinClient"), values.get("StickyClient")
    if round_robin is None or str(round_robin) == "NoClient":
        return ()

    def of(c: str) -> tuple[str, ...]:
        if c == str(round_robin):
            return MC_ROUND_ROBIN_PROTOCOLS
        return MC_STICKY_PROTOCOLS if c == str(sticky) else MC_OTHER_PROTOCOLS

    return tuple((str(c), of(str(c))) for c in sorted(str(c) for c in clients))


def instance_id(instance: tuple[str, ...]) -> str:
    """The group.instance.id string of a spec instance (its clients joined)."""
    return "instance-" + "+".join(instance)


_CFG_KEYWORDS = re.compile(
    r"^\s*(SPECIFICATION|INIT|NEXT|INVARIANTS?|PROPERT(?:Y|IES)|CONSTRAINTS?|"
    r"ACTION_CONSTRAINTS?|SYMMETRY|VIEW|CHECK_DEADLOCK|ALIAS|POSTCONDITION|CONSTANTS?)\b"
)


def cfg_constants(text: str) -> dict[str, TlaValue]:
    """`Name = value` assignments of a .cfg's CONSTANT(S) sections (comments dropped)."""
    out: dict[str, TlaValue] = {}
    inside = False
    for raw in text.splitlines():
        line = raw.split("\\*", 1)[0].rstrip()
        keyword = _CFG_KEYWORDS.match(line)
        if keyword:
            inside = keyword.group(1).startswith("CONSTANT")
            line = line[keyword.end() :]
        if not inside or "=" not in line or "<-" in line:
            continue
        name, _, value = line.partition("=")
        if name.strip().isidentifier():
            out[name.strip()] = parse_value(value.strip())
    return out


# ----------------------------------------------------------------------------------------------
# Member ids and plans
# ----------------------------------------------------------------------------------------------
