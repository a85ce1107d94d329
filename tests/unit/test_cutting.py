"""Applying cuts: DeleteRecords' own answer is the verification; only what may or may not
have landed is read back; a cut above a high watermark that dropped is lowered to it and
tried once more, never applied as it was."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import GroupRead, TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.services.cutting import delete_and_verify
from tests.helpers.fakes import FakeLogs

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
TIMED_OUT = KafkaFailure("REQUEST_TIMED_OUT", "followers did not catch up in time", True)


class Broker(FakeLogs):
    """A broker as DeleteRecords meets it: refuses a cut above the high watermark, moves
    the log start only forward, answers the new low watermark. `truncate` lowers a high
    watermark just before the next delete (an unclean leader election); `time_out` makes
    a delete time out, having landed (`landed`) or not."""

    def __init__(self, logs: Mapping[TopicPartition, list[int]]) -> None:
        self.logs = {tp: list(bounds) for tp, bounds in logs.items()}
        self.calls: list[str] = []
        self.truncate: dict[TopicPartition, int] = {}
        self.time_out: dict[TopicPartition, bool] = {}

    def _call(self, what: str) -> None:
        self.calls.append(what)

    def cluster_features(self) -> ClusterFeatures | None:
        return None  # what it runs is unknown: groups are read as before

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> dict[str, GroupRead]:
        raise AssertionError("applying cuts reads no group")

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaFailure]:
        self.calls.append(f"delete:{sorted((str(tp), o) for tp, o in cuts.items())}")
        for tp, end in self.truncate.items():
            self.logs[tp][1] = end
        self.truncate = {}
        out: dict[TopicPartition, int | KafkaFailure] = {}
        for tp, offset in cuts.items():
            start, end = self.logs[tp]
            if offset > end:
                out[tp] = KafkaFailure("OFFSET_OUT_OF_RANGE", f"{offset} is above {end}", False)
                continue
            if tp in self.time_out:
                if self.time_out.pop(tp):
                    self.logs[tp][0] = max(start, offset)
                out[tp] = TIMED_OUT
                continue
            self.logs[tp][0] = max(start, offset)
            out[tp] = self.logs[tp][0]
        return out


def test_the_delete_answer_verifies_the_cut_without_reading_offsets_again() -> None:
    broker = Broker({T0: [0, 100], T1: [0, 100]})
    applied = delete_and_verify(broker, {T0: 40, T1: 100})
    assert {tp: (a.done, a.log_start_after) for tp, a in applied.items()} == {
        T0: (True, 40),
        T1: (True, 100),
    }
    assert broker.calls == ["delete:[('t-0', 40), ('t-1', 100)]"]


def test_a_timed_out_delete_is_read_back_and_counted_only_if_it_landed() -> None:
    broker = Broker({T0: [0, 100], T1: [0, 100], T2: [0, 100]})
    broker.time_out = {T0: True, T1: False}
    applied = delete_and_verify(broker, {T0: 40, T1: 40, T2: 40})
    assert applied[T0].done
    assert applied[T0].log_start_after == 40
    assert not applied[T1].done
    assert applied[T1].failure == TIMED_OUT
    assert applied[T2].done
    # Only the two that timed out are read back, once.
    assert broker.calls == ["delete:[('t-0', 40), ('t-1', 40), ('t-2', 40)]", "offsets:earliest"]


def test_a_cut_above_a_high_watermark_that_dropped_is_lowered_and_retried_not_applied() -> None:
    broker = Broker({T0: [0, 100], T1: [0, 100]})
    broker.truncate = {T0: 80}  # after the fresh read, before the delete
    applied = delete_and_verify(broker, {T0: 100, T1: 60}, lower=True)
    assert (applied[T0].target, applied[T0].log_start_after, applied[T0].done) == (80, 80, True)
    assert broker.logs[T0] == [80, 80]
    assert applied[T1].done
    assert broker.logs[T1] == [60, 100]
    deletes = [c for c in broker.calls if c.startswith("delete")]
    assert deletes == ["delete:[('t-0', 100), ('t-1', 60)]", "delete:[('t-0', 80)]"]


def test_a_high_watermark_that_dropped_to_the_log_start_deletes_nothing_more() -> None:
    broker = Broker({T0: [50, 100]})
    broker.truncate = {T0: 50}
    applied = delete_and_verify(broker, {T0: 100}, lower=True)
    assert (applied[T0].target, applied[T0].log_start_after, applied[T0].done) == (50, 50, True)
    assert [c for c in broker.calls if c.startswith("delete")] == ["delete:[('t-0', 100)]"]


def test_an_out_of_range_cut_whose_high_watermark_did_not_drop_stays_refused() -> None:
    """The refusal was not a truncation (the high watermark read now is still at or above
    the cut): nothing is retried, the broker's answer is the outcome."""

    class Refusing(Broker):
        def delete_records(
            self, cuts: Mapping[TopicPartition, int]
        ) -> dict[TopicPartition, int | KafkaFailure]:
            self.calls.append("delete")
            return {tp: KafkaFailure("OFFSET_OUT_OF_RANGE", "refused", False) for tp in cuts}

    broker = Refusing({T0: [0, 100]})
    applied = delete_and_verify(broker, {T0: 90}, lower=True)
    refused = applied[T0].failure
    assert refused is not None
    assert refused.code == "OFFSET_OUT_OF_RANGE"
    assert not applied[T0].done
    assert broker.calls.count("delete") == 1


def test_a_policy_cut_above_a_dropped_high_watermark_waits_for_fresh_facts() -> None:
    """Without `lower` (RetentionPolicy runs): records written after a truncation may be
    newer than the policy's rules allow to cut, so nothing more is sent; the refusal is
    retriable and the next run plans from new offsets."""
    broker = Broker({T0: [0, 100]})
    broker.truncate = {T0: 80}
    applied = delete_and_verify(broker, {T0: 100})
    refused = applied[T0].failure
    assert refused is not None
    assert (refused.code, refused.retriable) == ("OFFSET_OUT_OF_RANGE", True)
    assert not applied[T0].done
    assert broker.logs[T0] == [0, 80]
    assert [c for c in broker.calls if c.startswith("delete")] == ["delete:[('t-0', 100)]"]


def test_a_negative_cut_is_never_sent_since_the_broker_reads_minus_one_as_the_end() -> None:
    broker = Broker({T0: [0, 100], T1: [0, 100]})
    applied = delete_and_verify(broker, {T0: -1, T1: 10}, lower=True)
    refused = applied[T0].failure
    assert refused is not None
    assert refused.code == "INVALID_CUT"
    assert broker.logs[T0] == [0, 100]
    assert broker.calls == ["delete:[('t-1', 10)]"]


def test_unreadable_bounds_after_an_out_of_range_cut_leave_it_to_retry() -> None:
    class Unreadable(Broker):
        def log_bounds(self, tps: Iterable[TopicPartition]) -> Any:
            failure = KafkaFailure("OFFSET_NOT_AVAILABLE", "new leader", True)
            return dict.fromkeys(tps, failure), dict.fromkeys(tps, failure)

    broker = Unreadable({T0: [0, 100]})
    broker.truncate = {T0: 80}
    applied = delete_and_verify(broker, {T0: 100}, lower=True)
    refused = applied[T0].failure
    assert refused is not None
    assert refused.retriable
    assert broker.logs[T0] == [0, 80]
