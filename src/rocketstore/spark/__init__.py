"""PySpark data sources over rocketstore stores and brokers (PySpark >= 4.0's Python Data Source API).

    from rocketstore.spark import register
    register(spark)
    df = spark.read.format("rocketmq-store").option("path", "/data/store").load()
    stream = spark.readStream.format("rocketmq").option("nameServer", "127.0.0.1:9876") \
        .option("subscribe", "TopicA").load()
    df.write.format("rocketmq").option("nameServer", "127.0.0.1:9876").option("topic", "TopicB").save()

Importing this package does not import pyspark or pyarrow; ``register`` does.  Install them with
``pip install 'rocketstore[spark]'``, on the driver and in every executor's Python environment.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(spark: Any) -> None:
    """Register every rocketstore data source with the SparkSession *spark*: ``rocketmq-store`` (batch
    source over a store directory) and ``rocketmq`` (streaming / batch source and sink on a broker)."""
    from rocketstore.spark.store_source import StoreDataSource
    from rocketstore.spark.stream_source import RocketMQDataSource

    spark.dataSource.register(StoreDataSource)
    spark.dataSource.register(RocketMQDataSource)
