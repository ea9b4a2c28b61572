"""The praha topic as a streaming table, and page counts as a materialized view.

`spark` is the pipeline's (Spark Connect) session, given to every pipeline file; the praha
data source is registered in it here, before the flows are defined. Each run reads what
arrived since the last one (the streaming table's checkpoint lives in `storage`)."""
from pyspark import pipelines as dp
from pyspark.sql import DataFrame

from praha.spark import PrahaDataSource

spark.dataSource.register(PrahaDataSource)  # noqa: F821 - the pipeline's session
BOOTSTRAP = spark.conf.get("praha.bootstrap")  # noqa: F821
TOPIC = spark.conf.get("praha.topic")  # noqa: F821


@dp.table
def pageviews_raw() -> DataFrame:
    return (spark.readStream.format("praha")  # noqa: F821
            .option("kafka.bootstrap.servers", BOOTSTRAP).option("subscribe", TOPIC)
            .option("startingOffsets", "earliest").load()
            .selectExpr("cast(key as string) as page", "cast(value as string) as visitor", "partition", "offset"))


@dp.materialized_view
def pageviews_per_page() -> DataFrame:
    return spark.read.table("pageviews_raw").groupBy("page").count()  # noqa: F821
