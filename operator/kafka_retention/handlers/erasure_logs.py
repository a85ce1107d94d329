"""What the operator logs about a RecordErasure: a wait on the log cleaner is a quiet
line, not a Warning event (QuietWaits), and spec.keys never reaches a Kopf log line, only
digests (WithheldKeys). Installed on Kopf's loggers when this module is imported."""

from __future__ import annotations

import ast
import base64
import binascii
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from kafka_retention.core.erasure import key_digest, parse_digest
from kafka_retention.core.specs import SpecError

KIND = "RecordErasure"


# What a quiet wait's TemporaryError says first. Kopf logs every TemporaryError as an
# error of the object, which its event poster turns into a Warning event: at each step of
# an erasure that only waits on the cleaner or on retention, the normal course. The
# filter below makes those records a quiet log line (INFO, no event); a run that cannot
# proceed (Kafka down, no signing key) still warns.
WAITING = "waiting:"
_QUIET_PREFIX = f"Handler 'erasure' failed temporarily: {WAITING}"


class QuietWaits(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_QUIET_PREFIX):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.k8s_skip = True  # kopf's poster leaves it out of the events
        return True


_QUIET_WAITS = QuietWaits()
if _QUIET_WAITS not in logging.getLogger("kopf.objects").filters:
    logging.getLogger("kopf.objects").addFilter(_QUIET_WAITS)


# --- Kopf's own log lines about a RecordErasure ----------------------------------------
# Kopf writes whole objects into its DEBUG lines, formatted into the message already:
# "Creation is in progress: {body!r}", "Creation diff: {diff!r}", "Merge-patching the
# resource with: {patch!r}" (the progress and diff-base annotations), "JSON-patching ...
# with: {ops!r}", and on its watch stream "Ignoring an unsupported event type: {raw!r}".
# With --verbose, a key given as `string` or `base64` would reach the operator log, and
# kubectl's last-applied-configuration annotation (part of the body) copies spec.keys
# once more. WithheldKeys rewrites such records: each spec.keys entry becomes the digest
# status shows ({'sha256': ...}) or "<withheld>", in bodies, diffs, patches and in
# annotations that hold JSON. A RecordErasure's payload it cannot read is withheld whole
# when it mentions keys. Other kinds' records are left as they are.

WITHHELD = "<withheld>"
UNREADABLE = "<withheld: a RecordErasure payload that could not be read to redact spec.keys>"
# Where a payload that Kopf formatted with repr() starts: after ": ", or the whole message.
_PAYLOAD = re.compile(r"(?:^|: )([\[{(])")
_DIFF_OPS = frozenset({"add", "change", "remove"})
_QUOTED_KEYS = re.compile(r"""['"]keys['"]""")


def _is_digest(value: object) -> bool:
    return (
        isinstance(value, str)
        and len(value) == 64
        and all(c in "0123456789abcdefABCDEF" for c in value)
    )


def _entry(item: Any) -> Any:
    """One spec.keys entry as a log line may show it: its digest, or WITHHELD."""
    if not isinstance(item, Mapping):
        return item if _is_digest(item) else WITHHELD
    given = [form for form in ("sha256", "string", "base64") if item.get(form) is not None]
    if len(given) != 1 or not isinstance(item[given[0]], str):
        return WITHHELD
    value: str = item[given[0]]
    try:
        if given[0] == "sha256":
            return {"sha256": parse_digest(value, "spec.keys")}
        key = value.encode() if given[0] == "string" else base64.b64decode(value, validate=True)
    except (SpecError, UnicodeEncodeError, binascii.Error, ValueError):
        return WITHHELD
    return {"sha256": key_digest(key)}


def _keys(value: Any) -> Any:
    """spec.keys, or a part of it (a diff can hold either; the diff base's reduced form
    {count, sha256} is kept)."""
    if isinstance(value, list | tuple):
        return [_entry(item) for item in value]
    if isinstance(value, Mapping):
        if any(form in value for form in ("string", "base64")):
            return _entry(value)
        return {k: v if isinstance(v, int) or _is_digest(v) else WITHHELD for k, v in value.items()}
    return value if value is None or isinstance(value, int) or _is_digest(value) else WITHHELD


def _spec(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return _redacted(value, erasure=True)
    return {k: _keys(v) if k == "keys" else _redacted(v, erasure=True) for k, v in value.items()}


def _at(path: tuple[Any, ...], value: Any) -> Any:
    """A value found at `path` in a RecordErasure (a diff's old or new), redacted."""
    wrapped = value
    for step in reversed(path):
        wrapped = {step: wrapped}
    redacted = _redacted(wrapped, erasure=True)
    for step in path:
        if not isinstance(redacted, Mapping) or step not in redacted:
            return WITHHELD  # redacted above the path's end: a part of a key entry
        redacted = redacted[step]
    return redacted


def _redacted(value: Any, *, erasure: bool) -> Any:
    """`value` (a body, diff, patch or anything Kopf logs) with the spec.keys of every
    RecordErasure in it redacted; `erasure`: it all belongs to one."""
    if isinstance(value, Mapping):
        erasure = erasure or value.get("kind") == KIND
        out = {
            k: _spec(v) if erasure and k == "spec" else _redacted(v, erasure=erasure)
            for k, v in value.items()
        }
        path = out.get("path")
        if erasure and "op" in out and "value" in out and isinstance(path, str):
            # A JSON-patch operation: its path says what its value is.
            steps = tuple(path.split("/")[1:])
            out["value"] = _at(steps, value["value"])
        return out
    if isinstance(value, tuple) and len(value) == 4 and value[0] in _DIFF_OPS:
        op, path, old, new = value
        if erasure and isinstance(path, tuple):  # Kopf's DiffItem: (op, path, old, new)
            return (op, path, _at(path, old), _at(path, new))
    if isinstance(value, list | tuple):
        return type(value)(_redacted(v, erasure=erasure) for v in value)
    if isinstance(value, str) and value[:1] in ("{", "["):
        return _redacted_json(value, erasure=erasure)
    return value


def _redacted_json(text: str, *, erasure: bool) -> str:
    """A string that holds JSON (an annotation: kubectl's last-applied-configuration,
    Kopf's progress and diff base), redacted; rewritten only if something was."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    redacted = _redacted(parsed, erasure=erasure)
    if redacted == parsed:
        return text
    return json.dumps(redacted, separators=(",", ":")) + ("\n" if text.endswith("\n") else "")


def _redacted_text(message: str, *, erasure: bool) -> str:
    # Only the first candidate: a later one is a part of it, read out of its context
    # (the list after "'keys': " is not a spec).
    first = _PAYLOAD.search(message)
    if first is not None:
        start = first.start(1)
        try:
            parsed = ast.literal_eval(message[start:])
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        else:
            redacted = _redacted(parsed, erasure=erasure)
            return message if redacted == parsed else message[:start] + repr(redacted)
    quoted = _QUOTED_KEYS.search(message)
    if erasure and quoted:
        # A repr or JSON naming keys that could not be read above: from the first ": "
        # on, withheld (our own refusals say spec.keys, unquoted, and stay).
        cut = message.find(": ", 0, quoted.start())
        return (message[: cut + 2] if cut >= 0 else "") + UNREADABLE
    return message


def _names_the_kind(record: logging.LogRecord) -> bool:
    args = record.args if isinstance(record.args, tuple) else (record.args,)
    return any(KIND in (a if isinstance(a, str) else repr(a)) for a in (record.msg, *args))


class WithheldKeys(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        ref = getattr(record, "k8s_ref", None)
        if isinstance(ref, Mapping) and ref.get("kind") != KIND:
            return True  # another kind's record, as it was
        # Without an object reference (Kopf's watch stream), only a RecordErasure found in
        # the payload itself is redacted: a line that never names the kind is not parsed
        # (every watch event of every kind passes here at DEBUG).
        erasure = isinstance(ref, Mapping)
        if not erasure and not _names_the_kind(record):
            return True
        if isinstance(record.msg, str):
            record.msg = _redacted_text(record.msg, erasure=erasure)
        if isinstance(record.args, Mapping):
            record.args = _redacted(record.args, erasure=erasure)
        elif isinstance(record.args, tuple):
            record.args = tuple(
                _redacted_text(arg, erasure=erasure)
                if isinstance(arg, str)
                else _redacted(arg, erasure=erasure)
                for arg in record.args
            )
        return True


_WITHHELD_KEYS = WithheldKeys()


def withhold_keys_in_kopf_logs() -> None:
    """The filter on each of Kopf's loggers: a logger's filters see only the records made
    on it, not those its children pass up. kopf.objects (every object's lines, its patches
    included) and the module loggers; all exist once kopf is imported."""
    names = ["kopf", "kopf.objects"] + [
        name for name in logging.Logger.manager.loggerDict if name.startswith("kopf.")
    ]
    for name in names:
        logger = logging.getLogger(name)
        if _WITHHELD_KEYS not in logger.filters:
            logger.addFilter(_WITHHELD_KEYS)


withhold_keys_in_kopf_logs()
