"""PySpark data sources over rocketstore stores (PySpark >= 4.0's Python Data Source API).

    from rocketstore.spark import register
    register(spark)
    df = spark.read.format("rocketmq-store").option("path", "/data/store").load()

Importing this package does not import pyspark or pyarrow; ``register`` does.  Install them with
``pip install 'rocketstore[spark]'``, on the driver and in every executor's Python environment.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(spark: Any) -> None:
    """Register every rocketstore data source with the SparkSession *spark* (``rocketmq-store``)."""
    from rocketstore.spark.store_source import StoreDataSource

    spark.dataSource.register(StoreDataSource)
