"""What every `kafka-retention` subcommand shares: its usage error, and client properties
files as Kafka's own tools read them."""

from __future__ import annotations

from pathlib import Path

from jproperties import Properties  # type: ignore[import-untyped]


class UsageError(ValueError):
    """The command line or a file it names is wrong; the command exits 2 and says why."""


def read_properties(path: Path) -> dict[str, str]:
    """A Java .properties file (`--command-config`), parsed by Java's rules: `=`, `:` or
    whitespace separators, `#`/`!` comments, escapes and continued lines."""
    props = Properties()
    try:
        with path.open("rb") as f:
            props.load(f, "utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except Exception as exc:  # jproperties raises its own parse errors
        raise UsageError(f"{path} is not a properties file: {exc}") from None
    return {str(key): str(value.data) for key, value in props.items()}
