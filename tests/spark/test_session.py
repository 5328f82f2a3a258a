"""The shared Spark session helper."""

import pytest

from albic.spark.session import SparkUnavailableError, spark_session


def test_the_session_has_albic_settings_and_runs_a_job(spark):
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.ui.enabled") == "false"
    numbers = spark.range(10)
    assert numbers.groupBy((numbers.id % 2).alias("parity")).count().count() == 2


def test_the_test_jvms_take_the_settings_of_tests_spark_conf(spark):
    arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "-XX:TieredStopAtLevel=1" in arguments, arguments


def test_asking_for_another_master_while_one_runs_is_an_error(spark):
    assert spark_session("local[2]") is spark
    with pytest.raises(SparkUnavailableError, match="already running"):
        spark_session("local[1]")


@pytest.mark.parametrize("engine", ["spark"])
def test_every_user_of_the_session_runs_on_one_worker(spark, engine, request):
    # Both ways a test asks for the session (the fixture, an engine parameter) put it in the
    # "spark" group, and xdist's own ids carry the group: one worker, one JVM.
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only under pytest -n N --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@spark"), request.node.nodeid


def test_no_java_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(SparkUnavailableError, match="Spark needs Java 17"):
        spark_session("local[1]")
