"""A pipeline job whose Python worker failed with an error that is not rocketstore's (an import that failed,
a bug) names that error in its one line, not the words "Traceback (most recent call last):"."""

from __future__ import annotations

from rocketstore.cli.pipeline_cmds import spark_error_line


def test_a_python_worker_traceback_gives_its_last_exception() -> None:
    failed = RuntimeError(
        "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback (most recent call "
        "last):\n  File \"/x/worker.py\", line 5, in main\n    import thing\nModuleNotFoundError: No module "
        "named 'thing'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback "
        "(most recent call last):\n  File \"/x/worker.py\", line 9, in main\n    raise KeyError\n"
        "pyspark.errors.exceptions.base.PySparkRuntimeError: [DATA_SOURCE_CREATE_ERROR] cannot create\n"
        " SQLSTATE: 38000\n\nJVM stacktrace:\norg.apache.spark.sql.AnalysisException: outer\n\tat x.y(z.java:1)")
    assert spark_error_line(failed) == ("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
                                        "PySparkRuntimeError: [DATA_SOURCE_CREATE_ERROR] cannot create")


def test_a_message_without_a_python_traceback_keeps_its_first_line() -> None:
    plain = RuntimeError("[PATH_ALREADY_EXISTS] Path file:/x already exists. SQLSTATE: 42K04\n"
                         "JVM stacktrace:\norg.apache.spark.sql.AnalysisException: other")
    assert spark_error_line(plain) == "[PATH_ALREADY_EXISTS] Path file:/x already exists."
