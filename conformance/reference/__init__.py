"""Kafka's own coordinator as the oracle: the client of the reference program
(reference/kafka-coordinator), which drives Kafka 3.9.1's GroupCoordinator in-process."""
