"""One small run of the local Spark session, for build.spark_class_archive: started with
-XX:ArchiveClassesAtExit, the JVM writes every class this run loaded into an archive
that later sessions map instead of loading and verifying each class again.

The run is the operator's own session (adapters.spark) planning a few partitions through
the planning core (retention_jobs.transforms), the path most of the tests' Spark JVMs
take. It needs no Kafka: the facts are made up here.
"""

from __future__ import annotations

from kafka_retention.adapters import spark
from kafka_retention.core.policy import RetentionRules
from retention_jobs import transforms

NOW = 1_800_000_000_000


def main() -> None:
    session = spark.local_session()
    facts = session.createDataFrame(
        [
            ("t", 0, 0, 100, {NOW - 1000: 30}, {"a": 40, "b": 60}, None),
            ("t", 1, 0, 100, {NOW - 1000: 70}, {"a": 40, "b": None}, None),
            ("t", 2, None, None, {}, {}, "TOPIC_AUTHORIZATION_FAILED: denied"),
        ],
        "topic string, partition int, logStartOffset long, highWatermark long, "
        "timeOffsets map<long,long>, committed map<string,long>, error string",
    )
    rules = RetentionRules(consumed_groups=("a", "b"), max_retention_ms=1000)
    planned = transforms.plan(facts, rules, NOW)
    if len(planned.collect()) != 3 or not transforms.group_rows(planned).collect():
        raise SystemExit("the training plan did not come back whole")
    spark.stop()


if __name__ == "__main__":
    main()
