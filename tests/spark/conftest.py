"""One Spark session for all Spark tests: starting a JVM costs seconds, so it is shared."""
import pytest


@pytest.fixture(scope="session")
def spark():
    from albic.spark.session import spark_session

    session = spark_session("local[2]", "albic-tests")
    yield session
    session.stop()
