"""Kafka's protocol error codes, as org.apache.kafka.common.protocol.Errors names and numbers them.

Only the codes the classic group coordinator (and the store behind it) can produce are listed;
the names are Kafka's so that a scenario file, a TLA+ trace and a broker log all read alike.
"""

from __future__ import annotations

from enum import Enum
from typing import Final


class Errors(Enum):
    """A Kafka error: the member name is Kafka's, the value is its wire code."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    GROUP_AUTHORIZATION_FAILED = 30
    KAFKA_STORAGE_ERROR = 56
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82

    @property
    def code(self) -> int:
        """The wire code (Kafka's `Errors.code()`)."""
        return self.value

    @classmethod
    def for_code(cls, code: int) -> Errors:
        """Kafka's `Errors.forCode`: unknown codes read as UNKNOWN_SERVER_ERROR, never raise."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR

    @classmethod
    def for_name(cls, name: str) -> Errors:
        """Look an error up by Kafka's name (as scenario files spell it); KeyError if unknown."""
        return cls[name]


# The members every request path reads, bound once, here: in Python 3.11 `Errors.X` costs ~10x a
# global (EnumType defines __getattr__, which sends every class-attribute lookup through the slow
# hook), and a heartbeat read two of them per request.
ERROR_NONE: Final = Errors.NONE
ERROR_COORDINATOR_LOAD_IN_PROGRESS: Final = Errors.COORDINATOR_LOAD_IN_PROGRESS
ERROR_REBALANCE_IN_PROGRESS: Final = Errors.REBALANCE_IN_PROGRESS
