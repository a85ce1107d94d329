"""The log keys bridge (spark-jobs/log_keys_bridge.py): which keys the connector's
classes name, and the jar javac builds for them."""

from __future__ import annotations

import importlib.util
import subprocess
import zipfile
from pathlib import Path
from types import ModuleType

from devstack import paths

REFERENCE = b"\x01\x00(org/apache/spark/internal/LogKeys$%s$"


def _bridge() -> ModuleType:
    spec = importlib.util.spec_from_file_location("log_keys_bridge", paths.LOG_KEYS_BRIDGE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _connector(jars: Path) -> None:
    """A jar named like the connector whose classes name three keys (one twice), and a
    class inside Spark's own package that names another, which is not the connector's."""
    with zipfile.ZipFile(jars / "spark-sql-kafka-0-10_2.13-4.0.0.jar", "w") as jar:
        jar.writestr("org/x/A.class", b"\xca\xfe" + REFERENCE % b"OFFSET" + REFERENCE % b"TOPIC")
        jar.writestr("org/x/B.class", REFERENCE % b"TOPIC" + REFERENCE % b"FROM_OFFSET")
        jar.writestr("org/apache/spark/internal/C.class", REFERENCE % b"EXECUTOR_ID")
        jar.writestr("META-INF/notes.txt", REFERENCE % b"NOT_A_CLASS")


def test_the_keys_named_are_those_of_the_connectors_classes(tmp_path: Path) -> None:
    _connector(tmp_path)
    bridge = _bridge()
    assert bridge.referenced_keys(sorted(tmp_path.glob("*.jar"))) == [
        "FROM_OFFSET",
        "OFFSET",
        "TOPIC",
    ]


def test_the_bridge_jar_has_a_class_per_key_and_leaves_spark_s_interface_out(
    tmp_path: Path,
) -> None:
    _connector(tmp_path)
    out = _bridge().build(tmp_path)
    assert out == tmp_path / "spark-kafka-log-keys-bridge.jar"
    with zipfile.ZipFile(out) as jar:
        classes = sorted(n for n in jar.namelist() if n.endswith(".class"))
    assert classes == [
        "org/apache/spark/internal/LogKeys$FROM_OFFSET$.class",
        "org/apache/spark/internal/LogKeys$OFFSET$.class",
        "org/apache/spark/internal/LogKeys$TOPIC$.class",
    ]
    shape = subprocess.run(
        ["javap", "-cp", str(out), "org.apache.spark.internal.LogKeys$TOPIC$"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "implements org.apache.spark.internal.LogKey" in shape
    assert "public static final org.apache.spark.internal.LogKeys$TOPIC$ MODULE$;" in shape


def test_a_moved_object_the_connector_names_is_given_back_under_its_old_name(
    tmp_path: Path,
) -> None:
    """The V2 batch reader names StreamExecution$ where Spark 4.0 had it: the jar holds a
    class by that name returning the moved object's member, and not the stub of the new
    one it was compiled against (Spark's own is the one that must run)."""
    old = b"org/apache/spark/sql/execution/streaming/StreamExecution$"
    with zipfile.ZipFile(tmp_path / "spark-sql-kafka-0-10_2.13-4.0.0.jar", "w") as jar:
        jar.writestr("org/x/R.class", b"\xca\xfe\x01\x00" + old)
    bridge = _bridge()
    assert bridge.referenced_moved(sorted(tmp_path.glob("*.jar"))) == [old.decode()]
    out = bridge.build(tmp_path)
    assert out is not None
    with zipfile.ZipFile(out) as jar:
        classes = sorted(n for n in jar.namelist() if n.endswith(".class"))
        folders = [n for n in jar.namelist() if n.endswith("runtime/")]
    assert classes == ["org/apache/spark/sql/execution/streaming/StreamExecution$.class"]
    assert folders == []
    shape = subprocess.run(
        [
            "javap",
            "-c",
            "-cp",
            str(out),
            "org.apache.spark.sql.execution.streaming.StreamExecution$",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (
        "public static final org.apache.spark.sql.execution.streaming.StreamExecution$ MODULE$;"
        in shape
    )
    assert "public java.lang.String QUERY_ID_KEY();" in shape
    assert "runtime/StreamExecution$.QUERY_ID_KEY" in shape


def test_no_key_named_builds_no_jar(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "spark-sql-kafka-0-10_2.13-4.0.0.jar", "w") as jar:
        jar.writestr("org/x/A.class", b"\xca\xfe")
    assert _bridge().build(tmp_path) is None
    assert not (tmp_path / "spark-kafka-log-keys-bridge.jar").exists()
