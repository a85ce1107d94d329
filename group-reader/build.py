"""Compile the group reader (GroupPositions.java) into JARS_DIR/kafka-retention-group-reader.jar.

It stands alone (the standard library, `javac` and `jar`): `make setup` (hack/devstack/
build.py) and the image's jar stage (Dockerfile) both run it after Maven has collected
pom.xml's jars into the same directory:

    python3 build.py JARS_DIR

The operator runs the reader with JARS_DIR/* on its class path
(KAFKA_RETENTION_GROUP_READER=JARS_DIR; kafka_retention/adapters/group_reader.py).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "GroupPositions.java"
JAR_NAME = "kafka-retention-group-reader.jar"


def build(jars: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp)
        subprocess.run(
            ["javac", "--release", "17", "-d", str(classes), "-cp", f"{jars}/*", str(SOURCE)],
            check=True,
        )
        out = jars / JAR_NAME
        subprocess.run(["jar", "--create", "--file", str(out), "-C", str(classes), "."], check=True)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build.py JARS_DIR")
    print(build(Path(sys.argv[1])))
