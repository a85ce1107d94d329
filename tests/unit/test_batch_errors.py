"""Whose status carries a shared batch's error in full (core.batch_errors)."""

from __future__ import annotations

from kafka_retention.core.batch_errors import (
    NAMES_OTHER_POLICY,
    NAMES_UNKNOWN,
    BatchFailed,
    as_told,
    names_any,
    told_in_full,
)


def test_a_topic_is_named_alone_or_with_its_partition_not_inside_a_longer_name() -> None:
    assert names_any("OFFSET_OUT_OF_RANGE on orders-3", ["orders"])
    assert names_any("topic orders: unknown", ["orders"])
    assert names_any("group 'orders.billing' has no commit", ["orders.billing"])
    assert not names_any("orders2-3 failed", ["orders"])
    assert not names_any("team-orders-x failed", ["orders"])
    assert not names_any("anything", [""])


def test_the_member_named_is_told_in_full_and_others_in_other_namespaces_are_not() -> None:
    names = {"a/p": ["orders", "billing"], "b/q": ["payments"], "b/r": ["refunds"]}
    assert told_in_full("billing has no commit on orders-1", names) == {"a/p"}


def test_nobody_is_told_in_full_when_no_member_or_two_namespaces_are_named() -> None:
    names = {"a/p": ["orders"], "b/q": ["payments"]}
    assert told_in_full("invoices-0 lost its leader", names) == set()
    assert told_in_full("orders-0 and payments-1 lost their leader", names) == set()


def test_in_one_namespace_an_error_naming_no_member_is_told_to_all() -> None:
    names = {"a/p": ["orders"], "a/q": ["payments"]}
    assert told_in_full("all brokers down", names) == {"a/p", "a/q"}
    assert told_in_full("orders-1 failed", names) == {"a/p"}


def test_a_member_not_told_in_full_hears_only_that_the_batch_failed() -> None:
    err = RuntimeError("orders-1 failed")
    assert as_told(err, "a/p", {"a/p"}) is err
    other = as_told(err, "b/q", {"a/p"})
    assert isinstance(other, BatchFailed)
    assert str(other) == NAMES_OTHER_POLICY
    assert str(as_told(err, "b/q", set())) == NAMES_UNKNOWN
