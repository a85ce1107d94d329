"""Client properties files read as Kafka's Java tools read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_retention.cli.common import UsageError, read_java_properties, read_properties


def test_properties_follow_java_rules(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# a comment\n"
        "! another\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism: SCRAM-SHA-512\n"
        "client.id  ops-tool\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="ops" password="s3cr=t";\n'
    )
    assert read_java_properties(path) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "client.id": "ops-tool",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="ops" password="s3cr=t";',
    }


def test_a_missing_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"cannot read .*nope\.properties"):
        read_properties(tmp_path / "nope.properties")
