"""Scenarios whose expectations Kafka 3.9.1's own coordinator does not meet, each with the Kafka
code that explains it. `kgc replay --reference kafka` reports these as EXPLAINED, not FAIL, when
the difference shows at the listed step; a failure at any other step is a FAIL. A listed
scenario may also pass: the differences below depend on HashMap order of random member ids."""

from __future__ import annotations

__all__ = ["EXPLAINED_DIFFERENCES"]

#: scenario name -> (step index at which Kafka's code differs, why, citing the Kafka code)
EXPLAINED_DIFFERENCES: dict[str, tuple[int, str]] = {
    "completing-rebalance-sync-timeout-removes-leader": (
        23,
        "the new leader is the first key of GroupMetadata.members, a scala.collection.mutable.HashMap: "
        "GroupMetadata.remove (core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala, "
        "`leaderId = members.keys.headOption`) picks by the hash of random UUID member ids, so which "
        "survivor leads is HashMap order; kgc's coordinator and this scenario pick the oldest member "
        "(conform steers the same choice). Not a protocol difference.",
    ),
}
