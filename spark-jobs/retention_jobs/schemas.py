"""Spark schemas of the pipeline's DataFrames (DDL strings, kept together)."""

# One row per partition, as extract.read_facts yields it: offsets, the offset at each
# lookup time, and each asked group's committed offset (null: none committed).
FACTS = (
    "topic string, partition int, logStartOffset long, highWatermark long, "
    "timeOffsets map<long,long>, committed map<string,long>, error string"
)
SIZES = "topic string, partition int, avgRecordBytes double"
LAGS = "topic string, partition int, group string, timeLagMs long"
UNCONSUMED = (
    "topic string, partition int, group string, unconsumedRecords long, "
    "unconsumedBytes long, sample array<struct<offset:long,key:string>>"
)
TOMBSTONES = (
    "topic string, partition int, recordsRead long, tombstones long, "
    "oldestTombstoneMs long, newestTombstoneMs long, "
    "oldestTombstones array<struct<offset:long,timestampMs:long>>"
)
GROUP_IMPACT = "struct<group:string,committedOffset:long,unconsumedToDelete:long>"
PLAN = (
    f"topic string, partition int, logStartOffset long, highWatermark long, "
    f"targetOffset long, rule string, reason string, reasonGuard string, "
    f"notes array<string>, guards array<string>, recordsToDelete long, "
    f"groups array<{GROUP_IMPACT}>, error string"
)
