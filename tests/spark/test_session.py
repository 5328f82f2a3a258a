"""The shared Spark session helper."""

import pytest

from albic.spark.session import SparkUnavailableError, spark_session


def test_the_session_has_albic_settings_and_runs_a_job(spark):
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.ui.enabled") == "false"
    numbers = spark.range(10)
    assert numbers.groupBy((numbers.id % 2).alias("parity")).count().count() == 2


def test_asking_for_another_master_while_one_runs_is_an_error(spark):
    assert spark_session("local[2]") is spark
    with pytest.raises(SparkUnavailableError, match="already running"):
        spark_session("local[1]")


def test_no_java_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(SparkUnavailableError, match="Spark needs Java 17"):
        spark_session("local[1]")
