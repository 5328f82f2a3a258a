"""Plans that leave albic: Flink's key groups (:mod:`albic.engines.flink`) and Kafka's partition
replicas (:mod:`albic.engines.kafka`)."""
