"""Build the jar that lets Spark's 4.0 Kafka connector log on Spark 4.1 and later.

The newest connector the reachable Maven repository serves whole is 4.0.0. Spark 4.0's
log keys were Scala objects (class `LogKeys$OFFSET$`, instance in `MODULE$`); Spark 4.1
made them constants of a Java enum (`LogKeys.OFFSET`), so every line the 4.0 connector
logs throws NoClassDefFoundError on 4.3, and it logs at every offset gap. This script
reads which of those classes the connector's jars name and compiles one small class per
key with the old name, the old `MODULE$` field and the new `LogKey` interface, whose
`name()` is the enum constant's name: what Spark 4.3 logs for the key is unchanged.

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


def referenced_keys(jars: list[Path]) -> list[str]:
    """The log keys whose Scala object classes the jars' classes name."""
    found: set[str] = set()
    for jar in jars:
        with zipfile.ZipFile(jar) as archive:
            for entry in archive.namelist():
                if entry.endswith(".class") and not entry.startswith(PACKAGE + "/"):
                    found.update(m.decode() for m in _REFERENCE.findall(archive.read(entry)))
    return sorted(found)


def source(key: str) -> str:
    return _CLASS.format(key=key)


def build(jars_dir: Path) -> Path | None:
    """Compile the bridge for what the connector jars in `jars_dir` name; None if nothing."""
    connector = sorted(jars_dir.glob("spark-*kafka-0-10_*.jar"))
    keys = referenced_keys(connector)
    if not keys:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        src, classes = Path(scratch, "src"), Path(scratch, "classes")
        (src / PACKAGE).mkdir(parents=True)
        (src / PACKAGE / "LogKey.java").write_text(_LOG_KEY)
        files = [src / PACKAGE / "LogKey.java"]
        for key in keys:
            path = src / PACKAGE / f"LogKeys${key}$.java"
            path.write_text(source(key))
            files.append(path)
        subprocess.run(
            ["javac", "--release", "17", "-d", str(classes), *map(str, files)], check=True
        )
        (classes / PACKAGE / "LogKey.class").unlink()
        out = jars_dir / JAR_NAME
        subprocess.run(["jar", "--create", "--file", str(out), "-C", str(classes), "."], check=True)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: log_keys_bridge.py JARS_DIR", file=sys.stderr)
        return 2
    out = build(Path(argv[0]))
    print(f"log keys bridge: {out or 'not needed (no key named)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
