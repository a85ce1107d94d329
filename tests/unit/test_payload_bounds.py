"""Every payload read back from a ConfigMap is bounded (kube_objects.chunks): a tenant
can write the ConfigMaps of its namespace (a RecordPurge's plan, a Spark run's in open
tenancy), so a forged manifest, a namespace full of parts or a gzip bomb is refused
before it takes the operator's memory, and the largest real plan still fits."""

from __future__ import annotations

import json
import time

import pytest

from kafka_retention.adapters import kube, spark
from kafka_retention.kube_objects.chunks import (
    CHUNK_BYTES,
    MAX_DECODED_BYTES,
    MAX_PARTS,
    MAX_STORED_BYTES,
    SinkError,
    assemble,
    sink_configmaps,
)
from tests.helpers.configmaps import FakeConfigMaps, bomb_configmaps, gzip_bomb


@pytest.fixture
def configmaps(monkeypatch: pytest.MonkeyPatch) -> FakeConfigMaps:
    fake = FakeConfigMaps()
    monkeypatch.setattr(kube, "read_configmap", fake.read)
    monkeypatch.setattr(kube, "list_configmaps", fake.list)
    return fake


def test_a_gzip_bomb_is_refused_quickly_naming_the_limit() -> None:
    bomb = gzip_bomb()
    assert len(bomb) < 2 * CHUNK_BYTES  # a gibibyte in two ConfigMaps
    objs = bomb_configmaps("run-bomb", "ns", bomb)
    # CPU time, not wall time: make test runs this beside a loaded stack (20.2 s of wall
    # time seen once). Inflating the whole gibibyte would cost several times the limit's.
    started = time.process_time()
    with pytest.raises(SinkError, match=f"more than {MAX_DECODED_BYTES} bytes.*MAX_DECODED_BYTES"):
        assemble(objs[-1], objs[:-1])
    assert time.process_time() - started < 20


def test_a_manifest_announcing_too_many_parts_is_refused_before_any_part_is_listed(
    configmaps: FakeConfigMaps,
) -> None:
    objs = sink_configmaps("run-3", "ns", "x")
    manifest = objs[-1]
    info = json.loads(manifest["data"]["manifest.json"])
    manifest["data"]["manifest.json"] = json.dumps({**info, "chunks": MAX_PARTS + 1})
    configmaps.put(objs)
    with pytest.raises(SinkError, match=f"at most {MAX_PARTS} parts"):
        kube.read_configmap_set("ns", "run-3", "plan")
    assert configmaps.listed == []


def test_parts_beyond_the_manifests_count_are_refused_and_not_all_listed(
    configmaps: FakeConfigMaps,
) -> None:
    """A thousand extra parts written next to a run's set: one more than the manifest
    announces is listed, and the set is refused."""
    objs = sink_configmaps("run-4", "ns", "payload")
    configmaps.put(objs)
    extra = objs[0]
    for i in range(1, 1000):
        forged = json.loads(json.dumps(extra))
        forged["metadata"]["name"] = f"run-4-plan-{i:04d}"
        forged["metadata"]["labels"]["kafka-retention.io/part"] = str(i)
        configmaps.put([forged])
    with pytest.raises(SinkError, match="expected 1 parts, found 2 or more"):
        kube.read_configmap_set("ns", "run-4", "plan")
    assert configmaps.listed == [("ns", 2)]


@pytest.mark.parametrize(
    "manifest",
    [
        "not json",
        json.dumps({"chunks": "1", "bytes": 1, "sha256": "x"}),
        json.dumps({"chunks": 1, "bytes": 1, "sha256": "x", "encoding": "br"}),
        json.dumps({"chunks": 1, "bytes": 10**12, "sha256": "x"}),
    ],
)
def test_a_malformed_or_oversized_manifest_is_a_sink_error(manifest: str) -> None:
    objs = sink_configmaps("run-5", "ns", "payload")
    objs[-1]["data"]["manifest.json"] = manifest
    with pytest.raises(SinkError):
        assemble(objs[-1], objs[:-1])


def test_a_plan_the_reader_would_refuse_is_refused_when_written() -> None:
    with pytest.raises(SinkError, match=f"at most {MAX_DECODED_BYTES}"):
        sink_configmaps("run-6", "ns", "x" * (MAX_DECODED_BYTES + 1), compress=True)


def test_a_plan_of_100000_partitions_fits_the_limits() -> None:
    """The largest plan the project runs (bench/: 100,000 partitions, two groups, each
    with an unconsumed key sample) round-trips gzipped, as the Spark driver writes it."""
    from kafka_retention.core.plan_lines import to_json_lines
    from kafka_retention.core.plan_row import GroupImpactRow, KeySample, PlanRow

    def row(p: int) -> PlanRow:
        def group(name: str) -> GroupImpactRow:
            return GroupImpactRow(
                name,
                committed_offset=123_456_789,
                unconsumed_to_delete=1234,
                unconsumed_bytes_to_delete=123_456,
                unconsumed_sample=tuple(
                    KeySample(123_456_789 + i, f"key-{p}-{i}-{p * 7919:x}") for i in range(10)
                ),
            )

        return PlanRow(
            f"app-orders-enricher-repartition-{p // 100:04d}",
            p % 100,
            log_start_offset=1_234_567,
            high_watermark=123_456_789,
            target_offset=12_345_678,
            rule="deleteConsumed",
            reason="every group in deleteConsumed committed past 12345678 (enricher, auditor)",
            notes=("minRetention holds back 1234 records",),
            records_to_delete=11_111_111,
            groups=(group("enricher"), group("auditor")),
            time_offsets={1764300000000: 12_345_670},
        )

    payload = to_json_lines([row(p) for p in range(100_000)], {}, [], policy="ns/p")
    objs = sink_configmaps("run-7", "ns", payload, compress=True)
    stored = json.loads(objs[-1]["data"]["manifest.json"])["bytes"]
    # The headroom chunks.py's comment promises.
    assert len(payload.encode()) * 1.5 < MAX_DECODED_BYTES
    assert stored * 8 < MAX_STORED_BYTES
    assert assemble(objs[-1], objs[:-1]) == payload


def test_a_runs_state_message_is_bounded_whatever_its_pod_says() -> None:
    pod = {
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "driver",
                    "state": {"terminated": {"reason": "Error", "message": "x" * 10**6}},
                }
            ],
        }
    }
    state = spark._pod_state(pod)
    assert state.phase == "Failed"
    assert len(state.message) == spark.MAX_STATE_MESSAGE
    assert state.message.startswith("driver terminated: Error x")
