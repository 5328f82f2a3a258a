"""From a trace to statistics: the topology spec, event files, periods, node counts, the
migration transition matrix, and the statistics job with its pandas engine (the Spark engine is
:mod:`albic.spark.stats_engine`). Imports base, core and io; never evaluation, rollout or testing."""
