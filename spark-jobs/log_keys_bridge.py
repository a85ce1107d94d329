"""Build the jar that lets Spark's 4.0 Kafka connector log on Spark 4.1 and later.

The newest connector the reachable Maven repository serves whole is 4.0.0. Spark 4.0's
log keys were Scala objects (class `LogKeys$OFFSET$`, instance in `MODULE$`); Spark 4.1
made them constants of a Java enum (`LogKeys.OFFSET`), so every line the 4.0 connector
logs throws NoClassDefFoundError on 4.3, and it logs at every offset gap. This script
reads which of those classes the connector's jars name and compiles one small class per
key with the old name, the old `MODULE$` field and the new `LogKey` interface, whose
`name()` is the enum constant's name: what Spark 4.3 logs for the key is unchanged.

The connector's DataSource V2 batch reader (what `kafka_source` reads with, about 10%
faster than the V1 relation: no row conversion back and forth) also names two Scala
objects that Spark 4.1 moved into a `runtime` package: `StreamExecution$` and
`MicroBatchExecution$`, for the names of two task properties. For each the connector
names, the jar holds a class under the old name whose members return the moved object's.

It stands alone (the standard library, `javac` and `jar`): `make setup` (hack/devstack/
build.py) and the image's Maven stage (Dockerfile) both run it after collecting the jars:

    python3 log_keys_bridge.py JARS_DIR

and it writes JARS_DIR/spark-kafka-log-keys-bridge.jar. With no key named, it writes
nothing.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "org/apache/spark/internal"
JAR_NAME = "spark-kafka-log-keys-bridge.jar"
# A Scala object's class: LogKeys$NAME$ (the enum constants are upper snake case).
_REFERENCE = re.compile(rb"org/apache/spark/internal/LogKeys\$([A-Z][A-Z0-9_]*)\$")

# Only to compile against: the jar leaves it out, Spark's own LogKey is the one loaded.
_LOG_KEY = """package org.apache.spark.internal;

public interface LogKey {
    String name();
}
"""

_CLASS = """package org.apache.spark.internal;

/** Spark 4.0's LogKeys.{key} object, as Spark 4.3 names the key (log_keys_bridge.py). */
public final class LogKeys${key}$ implements LogKey {{
    public static final LogKeys${key}$ MODULE$ = new LogKeys${key}$();

    private LogKeys${key}$() {{}}

    @Override
    public String name() {{
        return "{key}";
    }}
}}
"""


# Scala objects Spark 4.1 moved (old class name -> new), with the members the connector
# calls on them: each returns a String (the name of a task's local property).
MOVED = {
    "org/apache/spark/sql/execution/streaming/StreamExecution$": (
        "org/apache/spark/sql/execution/streaming/runtime/StreamExecution$",
        ("QUERY_ID_KEY",),
    ),
    "org/apache/spark/sql/execution/streaming/MicroBatchExecution$": (
        "org/apache/spark/sql/execution/streaming/runtime/MicroBatchExecution$",
        ("BATCH_ID_KEY",),
    ),
}

_OBJECT = """package {package};

/** {old} as Spark 4.1 and later have it in {new} (log_keys_bridge.py). */
public final class {name} {{
    public static final {name} MODULE$ = new {name}();

    private {name}() {{}}
{members}}}
"""

_MEMBER = """
    public String {member}() {{
        return {new}.MODULE$.{member}();
    }}
"""

# Only to compile against: the jar leaves it out, Spark's own moved object is the one run.
_STUB = """package {package};

public final class {name} {{
    public static final {name} MODULE$ = null;
{members}}}
"""

_STUB_MEMBER = """
    public String {member}() {{
        return null;
    }}
"""


def _split(internal: str) -> tuple[str, str]:
    """(package, simple name) of a class's internal name."""
    package, _, name = internal.rpartition("/")
    return package.replace("/", "."), name


def moved_object(old: str, new: str, members: tuple[str, ...]) -> str:
    package, name = _split(old)
    dotted = new.replace("/", ".")
    body = "".join(_MEMBER.format(member=m, new=dotted) for m in members)
    return _OBJECT.format(package=package, name=name, old=old, new=dotted, members=body)


def moved_stub(new: str, members: tuple[str, ...]) -> str:
    package, name = _split(new)
    body = "".join(_STUB_MEMBER.format(member=m) for m in members)
    return _STUB.format(package=package, name=name, members=body)


def _classes(jars: list[Path], outside: str = "") -> Iterator[bytes]:
    """The bytes of every class in the jars, but those under the package `outside`."""
    for jar in jars:
        with zipfile.ZipFile(jar) as archive:
            for entry in archive.namelist():
                if entry.endswith(".class") and not (outside and entry.startswith(outside)):
                    yield archive.read(entry)


def referenced_moved(jars: list[Path]) -> list[str]:
    """The moved objects (MOVED's old names) the jars' classes name."""
    return sorted({old for data in _classes(jars) for old in MOVED if old.encode() in data})


def referenced_keys(jars: list[Path]) -> list[str]:
    """The log keys whose Scala object classes the jars' classes name (Spark's own
    internal package left out: its classes are not the connector's)."""
    found = _classes(jars, outside=PACKAGE + "/")
    return sorted({m.decode() for data in found for m in _REFERENCE.findall(data)})


def source(key: str) -> str:
    return _CLASS.format(key=key)


def build(jars_dir: Path) -> Path | None:
    """Compile the bridge for what the connector jars in `jars_dir` name; None if nothing."""
    connector = sorted(jars_dir.glob("spark-*kafka-0-10_*.jar"))
    keys = referenced_keys(connector)
    moved = referenced_moved(connector)
    if not keys and not moved:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        src, classes = Path(scratch, "src"), Path(scratch, "classes")
        files: list[Path] = []
        stubs: list[str] = []  # compiled against, then left out of the jar

        def write(internal: str, text: str) -> None:
            path = src / f"{internal}.java"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            files.append(path)

        if keys:
            write(f"{PACKAGE}/LogKey", _LOG_KEY)
            stubs.append(f"{PACKAGE}/LogKey")
        for key in keys:
            write(f"{PACKAGE}/LogKeys${key}$", source(key))
        for old in moved:
            new, members = MOVED[old]
            write(old, moved_object(old, new, members))
            write(new, moved_stub(new, members))
            stubs.append(new)
        subprocess.run(
            ["javac", "--release", "17", "-d", str(classes), *map(str, files)], check=True
        )
        for stub in stubs:
            (classes / f"{stub}.class").unlink()
        for folder in sorted(classes.rglob("*"), reverse=True):  # the stubs' own, emptied
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        out = jars_dir / JAR_NAME
        subprocess.run(["jar", "--create", "--file", str(out), "-C", str(classes), "."], check=True)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: log_keys_bridge.py JARS_DIR", file=sys.stderr)
        return 2
    out = build(Path(argv[0]))
    print(f"log keys bridge: {out or 'not needed (no key or moved object named)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
