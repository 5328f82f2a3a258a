"""From a plan to a running engine: move schedules, Flink key-group ranges, Kafka reassignments.
Imports base, core and io; never stats, evaluation or testing."""
