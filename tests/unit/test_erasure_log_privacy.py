"""Kopf's own DEBUG lines about a RecordErasure (its body, diff and patches, which the
operator logs with --verbose) hold digests, never a key given as `string` or `base64`;
other kinds' lines are left as they are."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import kopf
import pytest
import yaml
from kopf._cogs.clients import api, patching
from kopf._cogs.structs import diffs, ephemera, patches, references
from kopf._core.actions import loggers
from kopf._core.intents import causes
from kopf._core.reactor import inventory, processing

from kafka_retention.handlers import erasure_logs as handler
from kafka_retention.handlers.settings import DiffBase

EMAIL = "alice.secret@example.com"
BYTES_KEY = b"\x00customer-4711\xff"
B64 = base64.b64encode(BYTES_KEY).decode()
OTHER = "bob.other@example.com"  # an earlier version's key, as a diff would show it
SHA = hashlib.sha256(b"carol").hexdigest()
PLAIN = (EMAIL, B64, OTHER)
DIGESTS = [hashlib.sha256(k).hexdigest() for k in (EMAIL.encode(), BYTES_KEY, OTHER.encode())]
RESOURCE = references.Resource(
    "kafka-retention.io",
    "v1alpha1",
    "recorderasures",
    namespaced=True,
    subresources=frozenset({"status"}),
)


def spec(*keys: dict[str, str]) -> dict[str, Any]:
    return {
        "cluster": {"clusterRef": "prod"},
        "topics": {"names": ["users"]},
        "keys": list(keys),
    }


def raw_body(kind: str = "RecordErasure", **more: Any) -> dict[str, Any]:
    given = spec({"string": EMAIL}, {"base64": B64}, {"sha256": SHA})
    applied = {"apiVersion": "kafka-retention.io/v1alpha1", "kind": kind, "spec": given}
    return {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": kind,
        "metadata": {
            "name": "forget",
            "namespace": "team-a",
            "uid": "u-1",
            "annotations": {
                # What client-side `kubectl apply` leaves: the object once more, as JSON.
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied) + "\n"
            },
        },
        "spec": given,
        **more,
    }


def body(raw: dict[str, Any]) -> kopf.Body:
    return kopf.Body(cast(kopf.RawBody, raw))


def kopf_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("kopf")]


def assert_no_plain_key(lines: list[str]) -> None:
    assert lines
    for line in lines:
        for plain in PLAIN:
            assert plain not in line, line


@contextmanager
def without_the_filter() -> Iterator[None]:
    """Kopf as it is without this operator: to show the tests below can fail."""
    installed = [
        logger
        for logger in map(logging.getLogger, ["kopf", *logging.Logger.manager.loggerDict])
        if handler._WITHHELD_KEYS in logger.filters
    ]
    for logger in installed:
        logger.removeFilter(handler._WITHHELD_KEYS)
    try:
        yield
    finally:
        for logger in installed:
            logger.addFilter(handler._WITHHELD_KEYS)


def run_kopf_creation(body: kopf.Body) -> None:
    asyncio.run(_run_kopf_creation(body))


async def _run_kopf_creation(body: kopf.Body) -> None:
    """Kopf's processing of a change with no handlers (its DEBUG lines: the body, the
    diff) and the patch it then sends (the diff-base annotation, Kopf's progress
    annotation), through kopf's own functions with a fake API."""
    settings = kopf.OperatorSettings()
    settings.persistence.diffbase_storage = DiffBase(
        prefix="kafka-retention.io", key="last-handled-configuration"
    )
    logger = loggers.LocalObjectLogger(body=body, settings=settings)
    # An old essence as an unreduced diff base would hold it: a diff of keys.
    old = {"spec": spec({"string": OTHER})}
    new = {"spec": spec({"string": EMAIL}, {"base64": B64}, {"sha256": SHA})}
    cause = causes.ChangingCause(
        logger=logger,
        indices={},
        memo=ephemera.AnyMemo(ephemera.Memo()),
        resource=RESOURCE,
        patch=patches.Patch(body=body),
        body=body,
        initial=False,
        reason=causes.Reason.UPDATE,
        diff=diffs.diff(old, new),
        old=cast(kopf.BodyEssence, old),
        new=cast(kopf.BodyEssence, new),
    )
    await processing.process_changing_cause(
        lifecycle=kopf.lifecycles.all_at_once,
        registry=kopf.OperatorRegistry(),
        settings=settings,
        memory=inventory.ResourceMemory(),
        cause=cause,
    )
    cause.patch.meta.annotations["kafka-retention.io/erasure"] = json.dumps(
        {"started": "2026-11-29T04:00:00Z", "retries": 1, "success": False}
    )
    cause.patch.status["phase"] = "Scanning"
    cause.patch.fns.append(lambda body: None)  # so that Kopf JSON-patches too

    async def fake_patch(url: str, **_: Any) -> dict[str, Any]:
        return {}

    original = api.patch
    api.patch = fake_patch
    try:
        await patching.patch_obj(
            settings=settings,
            resource=RESOURCE,
            namespace=references.NamespaceName("team-a"),
            name="forget",
            patch=cause.patch,
            logger=logger,
        )
    finally:
        api.patch = original


def test_kopfs_creation_diff_and_patch_lines_hold_digests_not_keys(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    run_kopf_creation(body(raw_body()))
    lines = kopf_lines(caplog)
    assert_no_plain_key(lines)
    text = "\n".join(lines)
    assert "Updating is in progress: {" in text
    assert "Updating diff: (" in text
    assert "Merge-patching the resource with: {" in text
    assert "Merge-patching the status with: {" in text
    # What was withheld is named by its digest, as status names it.
    for digest in DIGESTS:
        assert digest in text
    assert SHA in text


def test_without_the_filter_kopf_would_log_the_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with without_the_filter():
        run_kopf_creation(body(raw_body()))
    with pytest.raises(AssertionError):
        assert_no_plain_key(kopf_lines(caplog))


def test_the_filter_is_on_every_kopf_logger() -> None:
    # A logger's filters see only the records made on it, not those its children pass up.
    names = [n for n in logging.Logger.manager.loggerDict if n.startswith("kopf")]
    assert "kopf.objects" in names
    assert "kopf._cogs.clients.watching" in names
    for name in names:
        assert handler._WITHHELD_KEYS in logging.getLogger(name).filters, name


def record(message: str, kind: str | None = "RecordErasure") -> logging.LogRecord:
    made = logging.LogRecord("kopf.objects", logging.DEBUG, __file__, 1, message, (), None)
    if kind is not None:
        made.k8s_ref = {"kind": kind, "name": "forget", "namespace": "team-a"}
    return made


def redacted(message: str, kind: str | None = "RecordErasure") -> str:
    made = record(message, kind)
    assert handler.WithheldKeys().filter(made)
    return made.getMessage()


def test_other_kinds_lines_are_left_as_they_were() -> None:
    raw = raw_body(kind="RecordPurge")
    for message in [
        f"Creation is in progress: {body(raw)!r}",
        f"JSON-patching the resource with: {[{'op': 'add', 'path': '/spec/keys', 'value': 1}]!r}",
        "Handler 'purge' succeeded.",
    ]:
        assert redacted(message, kind="RecordPurge") == message
    watch = f"Ignoring an unsupported event type: {{'type': 'X', 'object': {raw!r}}}"
    assert redacted(watch, kind=None) == watch


def test_a_watch_event_without_an_object_reference_is_redacted_by_its_kind() -> None:
    line = redacted(
        f"Ignoring an unsupported event type: {{'type': 'X', 'object': {raw_body()!r}}}"
    )
    assert_no_plain_key([line])
    line = redacted(
        f"Ignoring an unsupported event type: {{'type': 'X', 'object': {raw_body()!r}}}", kind=None
    )
    assert_no_plain_key([line])
    assert DIGESTS[0] in line


def test_json_patch_operations_on_keys_are_redacted() -> None:
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/spec/keys", "value": [{"string": EMAIL}]},
        {"op": "replace", "path": "/spec/keys/0", "value": {"base64": B64}},
        {"op": "replace", "path": "/spec", "value": spec({"string": OTHER})},
    ]
    line = redacted(f"JSON-patching the resource with: {ops!r}")
    assert_no_plain_key([line])
    assert "'/metadata/resourceVersion', 'value': '7'" in line


def test_a_diff_of_one_key_field_is_withheld() -> None:
    diff = (("change", ("spec", "keys", 0, "string"), OTHER, EMAIL),)
    line = redacted(f"Updating diff: {diff!r}")
    assert_no_plain_key([line])


def test_a_payload_the_filter_cannot_read_is_withheld_whole() -> None:
    line = redacted(f"Creation is in progress: Body({{'spec': {{'keys': [{{'string': {EMAIL!r}}}]")
    assert line == f"Creation is in progress: {handler.UNREADABLE}"


def test_a_key_field_that_is_not_a_key_is_withheld_not_shown() -> None:
    # A person pastes an e-mail address into sha256:.
    body = raw_body()
    body["spec"]["keys"] = [{"sha256": EMAIL}, {"base64": "not base64!"}, "bare"]
    line = redacted(f"Creation is in progress: {body!r}")
    assert_no_plain_key([line])
    assert "'keys': ['<withheld>', '<withheld>', '<withheld>']" in line


def test_handler_lines_without_a_payload_are_left_as_they_were() -> None:
    for message in [
        "Handler 'erasure' succeeded.",
        "Handler 'erasure' failed permanently: spec.keys[0].sha256: is not 64 hexadecimal",
        "Handler 'erasure' failed temporarily: [Errno 111] Connection refused",
        "Creation is processed: 1 succeeded; 0 failed.",
    ]:
        assert redacted(message) == message


def test_args_are_redacted_too() -> None:
    made = record("Creation is in progress: %r")
    made.args = (body(raw_body()),)
    handler.WithheldKeys().filter(made)
    assert_no_plain_key([made.getMessage()])


def test_the_crd_and_the_how_to_say_a_digest_is_pseudonymous_not_anonymous() -> None:
    # An e-mail address's or a phone number's SHA-256 falls to a dictionary.
    root = Path(__file__).parents[2]
    crd = yaml.safe_load((root / "crds/recorderasures.kafka-retention.io.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    keys = " ".join(schema["properties"]["spec"]["properties"]["keys"]["description"].split())
    how_to = " ".join((root / "docs/how-to/erasure.md").read_text().split())
    for text in (keys, how_to):
        assert "A digest is pseudonymous, not anonymous" in text
        assert "by hashing candidates until one matches" in text


def test_a_watch_line_of_another_kind_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def parsed(_text: str) -> Any:
        raise AssertionError("a line that never names RecordErasure was parsed")

    monkeypatch.setattr("kafka_retention.handlers.erasure_logs.ast.literal_eval", parsed)
    line = f"Received event: {raw_body(kind='RetentionPolicy')!r}"
    assert redacted(line, kind=None) == line
