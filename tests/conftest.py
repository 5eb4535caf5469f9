import numpy as np
import pytest

#: Test files that start a Spark session: one worker runs them all (one JVM, not two).
SPARK_FILES = ("tests/test_spark.py", "tests/streams/test_spark_stream.py",
               "tests/audit/test_record_pairs.py")  # fmt: skip


def pytest_xdist_make_scheduler(config, log):
    """``-n 2`` sends each test file whole to one worker, and every Spark file to the
    same one (one JVM, not two). A file's tests share the numba kernels they compile:
    split over two workers, both compiled them at once (a quarter more CPU measured on
    the numeric tests from an install's cache). xdist's own ``loadgroup`` marks no longer
    reach its scheduler under pytest 9, which keeps a node's id apart from the
    ``_nodeid`` that xdist rewrites."""
    if config.getvalue("dist") not in ("load", "loadgroup", "loadfile"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "spark" if nodeid.startswith(SPARK_FILES) else nodeid.split("::", 1)[0]

    return ByFile(config, log)


@pytest.fixture
def small_counts():
    return np.array([3, 0, 5, 1, 0, 0, 7, 2], dtype=np.int64)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (one core) for the whole test session; skips without
    pyspark or Java. Spark tests share an xdist group, so one worker starts it."""
    pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (dphist[spark])")
    import shutil

    if shutil.which("java") is None and not __import__("os").environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java (17 or later) on PATH or JAVA_HOME")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("dphist-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -Xss4m")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.adaptive.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    assert pyspark.__version__
    yield session
    session.stop()


@pytest.fixture(autouse=True, scope="session")
def _private_design_cache(tmp_path_factory):
    """Designs fitted by the tests go to a fresh per-user cache folder, not the
    developer's own (``dphist._numeric.design_cache``)."""
    import os

    old = os.environ.get("DPHIST_CACHE_DIR")
    os.environ["DPHIST_CACHE_DIR"] = str(tmp_path_factory.mktemp("user-cache"))
    yield
    if old is None:
        os.environ.pop("DPHIST_CACHE_DIR", None)
    else:
        os.environ["DPHIST_CACHE_DIR"] = old
