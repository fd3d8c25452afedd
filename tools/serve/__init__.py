"""`kgc serve`: the coordinator behind a Kafka wire-protocol listener, so Kafka's own clients
(kafka-python, aiokafka, librdkafka) can form consumer groups against it.

Modules: `codec` (the served API versions and kafka-python's generated message classes as the
codec), `broker` (one broker's answers: metadata, offsets, empty fetches, and the group calls
into kgc.impl's GroupCoordinator), `recording` (the run as a scenario file and a recorded trace
for `kgc validate`), `server` (asyncio connections and the clock that drives the timing wheel).
"""
