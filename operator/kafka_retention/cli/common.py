"""What every `kafka-retention` subcommand shares: its usage error, client properties
files as Kafka's own tools read them, and progress on a terminal."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from kafka_retention.core.client_config import parse_properties, to_librdkafka
from kafka_retention.core.client_properties import ClientPropertyError


class UsageError(ValueError):
    """The command line or a file it names is wrong; the command exits 2 and says why."""


def fail(status: int, message: str) -> int:
    """Say why on stderr; the command's exit status."""
    print(message, file=sys.stderr)
    return status


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


class Progress:
    """How far a long command has got, on stderr: one line rewritten in place (`\\r`) on a
    terminal; nothing when stderr is piped or redirected, so a script reading the
    command's output (or its errors) sees no progress, unless `verbose`, which prints
    each stage as a line of its own. Whatever goes to stdout first calls `clear`."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        verbose: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.tty = self._stream.isatty()
        self._verbose, self._clock = verbose, clock
        self._started = clock()
        self._shown = 0  # the width of the line on screen, 0 when there is none
        self._stage = ""
        self._lock = threading.Lock()  # the line is written from a ticker thread too

    def _stamp(self, message: str) -> str:
        return f"[{self._clock() - self._started:5.1f}s] {message}"

    def stage(self, message: str) -> None:
        """A new stage of the work."""
        self._stage = message
        if self.tty:
            self.update(message)
        elif self._verbose:
            print(self._stamp(message), file=self._stream, flush=True)

    def update(self, message: str) -> None:
        """The line on a terminal, rewritten (a count going up); nothing elsewhere."""
        if not self.tty:
            return
        with self._lock:
            line = self._stamp(message)
            self._stream.write("\r" + line.ljust(self._shown))
            self._stream.flush()
            self._shown = len(line)

    def clear(self) -> None:
        """Take the line off the terminal, before other output."""
        with self._lock:
            if self._shown:
                self._stream.write("\r" + " " * self._shown + "\r")
                self._stream.flush()
                self._shown = 0

    @contextmanager
    def ticking(self, done: Callable[[], str | None], every_s: float = 0.5) -> Iterator[None]:
        """On a terminal, while the block runs, the current stage's line every `every_s`
        with what `done` says of it (`120 of 400 tasks`; None: nothing to add), and the
        clock going on; elsewhere nothing."""
        if not self.tty:
            yield
            return
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(every_s):
                said = done()
                self.update(f"{self._stage} ({said})" if said else self._stage)

        ticker = threading.Thread(target=tick, name="progress", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()


# Where the operator runs when nothing else says: the chart's and the manifests' namespace.
DEFAULT_OPERATOR_NAMESPACE = "kafka-retention-system"


def operator_namespace_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """--operator-namespace: `what` lives there. $POD_NAMESPACE first, as the operator's
    pod (and a command run inside it) has it."""
    parser.add_argument(
        "--operator-namespace",
        default=os.environ.get("POD_NAMESPACE") or DEFAULT_OPERATOR_NAMESPACE,
        metavar="NS",
        help=f"{what} (default: $POD_NAMESPACE, else {DEFAULT_OPERATOR_NAMESPACE})",
    )


def command_config_flag(parser: argparse.ArgumentParser) -> None:
    """--command-config, for the commands that talk to Kafka themselves."""
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help="client properties file (SASL/TLS): Java client properties, as "
        "kafka-delete-records.sh takes them, or librdkafka's names",
    )


def kube_connection_flags(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """-n, --context and --kubeconfig, as kubectl takes them. On a subcommand they default
    to SUPPRESS, so one given before the subcommand is not reset by it."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "-n",
        "--namespace",
        default=default,
        metavar="NS",
        help="the namespace (default: the context's, else default)",
    )
    kubeconfig_flags(parser, default)


def kubeconfig_flags(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    """--context and --kubeconfig, as kubectl takes them."""
    parser.add_argument(
        "--context", default=default, metavar="NAME", help="the kubeconfig context to use"
    )
    parser.add_argument(
        "--kubeconfig",
        default=default,
        metavar="FILE",
        help="the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)",
    )


# `kafka-retention verify-receipt`: its exit statuses (cli.erase.verify_receipt).
VERIFY_RECEIPT_DESCRIPTION = (
    "Checks a RecordErasure receipt: exit 0 when it is intact and signed by the key given "
    "with --public-key; exit 3 when it is intact but no --public-key was given, so the "
    "signer is not checked (anyone can sign a receipt with a key of their own); exit 1 with "
    "the reason on stderr when it is not intact, not a receipt or not signed by that key; "
    "exit 2 when a file cannot be read."
)
