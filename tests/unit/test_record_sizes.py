"""A record's size as the in-process scans count it (adapters/kafka_records.stored_size),
the same way Spark's scans do (octet_length of each part): bytes, not characters."""

from __future__ import annotations

from confluent_kafka import Message

from kafka_retention.adapters.kafka_records import RECORD_OVERHEAD_BYTES, stored_size


def test_a_header_key_counts_its_bytes_not_its_characters() -> None:
    message = Message(
        topic="t", partition=0, offset=1, key=b"k", value=b"vv", headers=[("clé", b"xyz")]
    )
    # "clé" is 3 characters and 4 bytes in UTF-8.
    assert stored_size(message) == 1 + 2 + 4 + 3 + RECORD_OVERHEAD_BYTES


def test_a_tombstone_without_headers_counts_its_key_and_the_overhead() -> None:
    message = Message(topic="t", partition=0, offset=1, key=b"key", value=None)
    assert stored_size(message) == 3 + RECORD_OVERHEAD_BYTES
