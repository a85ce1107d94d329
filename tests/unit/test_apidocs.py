"""The API reference (docs/reference/) is generated from crds/ by hack/apidocs.py and says
what `kubectl explain` says, with types, defaults and validation."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import markdown
import pytest
import yaml

import apidocs

REPO = Path(__file__).resolve().parents[2]
CRDS = sorted((REPO / "crds").glob("*.kafka-retention.io.yaml"))

SMALL_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.kafka-retention.io"},
    "spec": {
        "group": "kafka-retention.io",
        "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "description": "A widget.",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "self.size <= 10 ||\n  self.big",
                                        "message": "size above 10 needs big",
                                    }
                                ],
                                "properties": {
                                    "size": {
                                        "type": "integer",
                                        "format": "int32",
                                        "minimum": 1,
                                        "default": 3,
                                        "description": "How many <parts> to make_all.",
                                    },
                                    "big": {"type": "boolean", "description": "Allow more."},
                                    "tags": {
                                        "type": "array",
                                        "maxItems": 5,
                                        "items": {"type": "string", "maxLength": 8},
                                        "description": "Free-form tags.",
                                    },
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def _write(crds: Path, crd: dict[str, Any]) -> Path:
    crds.mkdir(parents=True, exist_ok=True)
    path = crds / f"{crd['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(crd, sort_keys=False))
    return path


def _section(page: str, path: str) -> str:
    """The part of a page about one field: from its heading to the next."""
    found = re.search(rf"^#+ {re.escape(path)} \{{.*?(?=^#+ |\Z)", page, re.M | re.S)
    assert found, f"no section for {path}"
    return found.group(0)


def _text(md: str) -> str:
    """What a reader sees of `md` rendered as mkdocs renders it (tags gone, entities read)."""
    rendered = markdown.markdown(md, extensions=["tables", "toc", "attr_list"])
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


def test_a_field_shows_its_type_required_default_validation_and_description(
    tmp_path: Path,
) -> None:
    _write(tmp_path, SMALL_CRD)
    page = apidocs.render(tmp_path)["widget.md"]

    size = _section(page, "spec.size")
    assert "{ #spec-size }" in size
    assert "**Type:** `integer`" in size
    assert "**Required:** yes" in size
    assert "**Default:** `3`" in size
    assert "minimum `1`" in size
    assert "format `int32`" in size
    assert "How many <parts> to make_all." in _text(size)
    assert "**Required:** no" in _section(page, "spec.big")


def test_a_cel_rule_shows_with_the_message_the_api_server_answers(tmp_path: Path) -> None:
    _write(tmp_path, SMALL_CRD)
    spec = _section(apidocs.render(tmp_path)["widget.md"], "spec")

    assert "`self.size <= 10 || self.big`: size above 10 needs big" in spec


def test_a_list_of_scalars_shows_the_bounds_of_each_item(tmp_path: Path) -> None:
    _write(tmp_path, SMALL_CRD)
    tags = _section(apidocs.render(tmp_path)["widget.md"], "spec.tags")

    assert "**Type:** `[]string`" in tags
    assert "max items `5`" in tags
    assert "**Each item:** max length `8`" in tags


def test_printer_columns_are_listed(tmp_path: Path) -> None:
    _write(tmp_path, SMALL_CRD)
    page = apidocs.render(tmp_path)["widget.md"]

    assert "| Size | `integer` | `.spec.size` | always |  |" in page


@pytest.mark.parametrize(
    "text",
    [
        "Secret <kafka>-cluster-ca-cert, ssl.keystore.*, __consumer_offsets & `offset`",
        "# not a heading",
        "- not a list",
        "1. not a list either",
        "[not](a-link) {#no-id} a|b \\ back",
        "two\nlines",
    ],
)
def test_markup_in_a_description_shows_as_written(text: str) -> None:
    assert _text(apidocs.plain(text)) == text


def _descriptions(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        if isinstance(schema.get("description"), str):
            yield schema["description"]
        for value in schema.values():
            yield from _descriptions(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _descriptions(value)


@pytest.mark.parametrize("crd_file", CRDS, ids=lambda p: p.name)
def test_every_description_of_the_crds_shows_as_kubectl_explain_prints_it(
    crd_file: Path,
) -> None:
    crd = yaml.safe_load(crd_file.read_text())
    for version in crd["spec"]["versions"]:
        for text in _descriptions(version["schema"]):
            assert _text(apidocs.plain(text)) == text


def _paths(schema: dict[str, Any], path: str) -> Iterator[str]:
    """Field paths as kubectl explain takes them: arrays and maps add no step."""
    for name, sub in schema.get("properties", {}).items():
        yield f"{path}.{name}".lstrip(".")
        yield from _paths(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _paths(schema[key], path)


def test_every_field_of_the_crds_has_a_section() -> None:
    pages = apidocs.render()
    for crd_file in CRDS:
        crd = yaml.safe_load(crd_file.read_text())
        page = pages[f"{crd['spec']['names']['singular']}.md"]
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        paths = [p for p in _paths(schema, "") if p.split(".")[0] in ("spec", "status")]
        assert len(paths) > 20
        for path in paths:
            _section(page, path)


def test_check_fails_naming_the_page_when_a_crd_changes_without_regenerating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crds, out = tmp_path / "crds", tmp_path / "reference"
    crds.mkdir()
    for crd_file in CRDS:
        shutil.copy(crd_file, crds / crd_file.name)
    assert apidocs.main([], crds, out) == 0
    assert apidocs.main(["--check"], crds, out) == 0

    purge = crds / "recordpurges.kafka-retention.io.yaml"
    purge.write_text(purge.read_text().replace("Kafka topic name.", "The topic's name."))
    assert apidocs.main(["--check"], crds, out) == 1
    err = capsys.readouterr().err
    assert "recordpurge.md is out of date" in err
    assert "retentionpolicy.md" not in err

    assert apidocs.main([], crds, out) == 0
    assert apidocs.main(["--check"], crds, out) == 0
    assert "The topic's name." in (out / "recordpurge.md").read_text()


def test_check_fails_on_a_page_whose_crd_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crds, out = tmp_path / "crds", tmp_path / "reference"
    _write(crds, SMALL_CRD)
    assert apidocs.main([], crds, out) == 0
    (crds / "widgets.kafka-retention.io.yaml").unlink()

    assert apidocs.main(["--check"], crds, out) == 1
    assert "widget.md has no CRD" in capsys.readouterr().err


def test_the_committed_reference_matches_the_crds() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "hack" / "apidocs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
