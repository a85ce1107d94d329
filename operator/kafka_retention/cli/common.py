"""What every `kafka-retention` subcommand shares: its usage error, and client properties
files as Kafka's own tools read them."""

from __future__ import annotations

from pathlib import Path

from kafka_retention.core.client_config import parse_properties, to_librdkafka
from kafka_retention.core.client_properties import ClientPropertyError


class UsageError(ValueError):
    """The command line or a file it names is wrong; the command exits 2 and says why."""


def read_java_properties(path: Path) -> dict[str, str]:
    """A Java .properties file, parsed by Java's rules: `=`, `:` or whitespace
    separators, `#`/`!` comments, escapes and continued lines."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return parse_properties(data, str(path))
    except ClientPropertyError as exc:
        raise UsageError(str(exc)) from None


def read_properties(path: Path) -> dict[str, str]:
    """`--command-config`: the client properties file the Java tools take (Java's names
    or librdkafka's; store locations are file paths), as librdkafka properties."""
    # Imported here: the stores' parsers load `cryptography`, which a command without
    # --command-config never needs.
    from kafka_retention.adapters.keystores import Stores, read_file

    props = read_java_properties(path)
    try:
        return to_librdkafka(props, Stores(read_file))
    except ClientPropertyError as exc:
        raise UsageError(f"{path}: {exc}") from None
