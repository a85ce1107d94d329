"""The krew manifest of the kubectl plugin (plugins/krew/kafka-retention.yaml): the fields
krew's validation requires, the name kubectl runs, and placeholders where no release
archive exists yet, never an address made up for one."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import yaml

from tests.helpers.paths import REPO

MANIFEST = REPO / "plugins" / "krew" / "kafka-retention.yaml"


def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return loaded


def test_the_manifest_is_a_krew_plugin_named_as_kubectl_calls_it() -> None:
    plugin = manifest()
    assert plugin["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert plugin["kind"] == "Plugin"
    # krew installs `kubectl-<name with - as _>`; kubectl runs it as `kubectl <name>`.
    assert plugin["metadata"]["name"] == "kafka-retention"
    spec = plugin["spec"]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", spec["version"])
    assert spec["shortDescription"]
    assert len(spec["shortDescription"]) <= 80


def test_its_version_is_the_python_packages() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert manifest()["spec"]["version"] == f"v{project['version']}"


def test_the_executable_it_installs_is_the_one_the_python_package_installs() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-kafka_retention"] == "kafka_retention.cli.plugin:main"
    for platform in manifest()["spec"]["platforms"]:
        assert platform["bin"] == "kubectl-kafka_retention"
        assert {"from": "kubectl-kafka_retention", "to": "."} in platform["files"]


def test_each_platform_is_selected_once_and_waits_for_the_release_archive() -> None:
    platforms = manifest()["spec"]["platforms"]
    selected = [tuple(sorted(p["selector"]["matchLabels"].items())) for p in platforms]
    assert len(selected) == len(set(selected))
    for platform in platforms:
        assert platform["uri"] == "RELEASE_ARCHIVE_URI"
        assert platform["sha256"] == "RELEASE_ARCHIVE_SHA256"
    assert "RELEASE_ARCHIVE_URI" in MANIFEST.read_text().split("apiVersion:")[0]
