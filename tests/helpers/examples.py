"""The project's YAML that users copy: every file in examples/ and every ```yaml block
of README.md and docs/**/*.md that holds a kafka-retention.io object, with what its first
line says it is for (issue 45's contract, /examples/kafkaclusterbinding.yaml's binding):

    (no marker)                  a whole object, accepted under strict tenancy
    # tenancy: open              a whole object, accepted by an operator run with
                                 --tenancy=open (a second line may still say it is refused)
    # expect: refused <Reason>   refused, with this Ready reason from the operator, or by
                                 the API server when <Reason> is `admission`
    # fragment                   part of an object: it parses, and every field it names
                                 is one the CRDs define

Pure: reads files, no stack. tests/unit/test_examples_contract.py covers it;
tests/e2e/test_examples_accepted.py applies what it collects."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from tests.helpers.paths import REPO

GROUP = "kafka-retention.io"
EXAMPLES = REPO / "examples"
CRDS = {
    "RecordPurge": REPO / "crds" / "recordpurges.kafka-retention.io.yaml",
    "RetentionPolicy": REPO / "crds" / "retentionpolicies.kafka-retention.io.yaml",
    "KafkaClusterBinding": REPO / "crds" / "kafkaclusterbindings.kafka-retention.io.yaml",
    "RecordErasure": REPO / "crds" / "recorderasures.kafka-retention.io.yaml",
}
NAMESPACED = ("RecordPurge", "RetentionPolicy", "RecordErasure")
# The API server refusing to store the object, rather than the operator's Ready reason.
ADMISSION = "admission"

Tenancy = Literal["strict", "open"]


@dataclass(frozen=True)
class Expectation:
    tenancy: Tenancy = "strict"
    refused: str | None = None  # the reason, or ADMISSION; None: accepted
    fragment: bool = False


_TENANCY = re.compile(r"#\s*tenancy:\s*(\S+)\s*$")
_EXPECT = re.compile(r"#\s*expect:\s*(.*?)\s*$")
_REFUSED = re.compile(r"refused\s+([A-Za-z][A-Za-z0-9]*)")
_FRAGMENT = re.compile(r"#\s*fragment\b")


def expectation(text: str) -> Expectation:
    """What the first line (and, after `# tenancy: open`, the second) says. A line that
    starts like a marker but does not follow its grammar raises ValueError, so a typo in
    a marker fails instead of silently meaning "accepted under strict"."""
    lines = text.lstrip("\n").splitlines() or [""]
    first = lines[0].strip()
    if _FRAGMENT.match(first):
        return Expectation(fragment=True)
    tenancy = _TENANCY.match(first)
    if tenancy:
        if tenancy.group(1) != "open":
            raise ValueError(f"unknown tenancy marker {first!r}: only `# tenancy: open` exists")
        second = lines[1].strip() if len(lines) > 1 else ""
        return Expectation(tenancy="open", refused=_refusal(second))
    return Expectation(refused=_refusal(first))


def _refusal(line: str) -> str | None:
    expect = _EXPECT.match(line)
    if expect is None:
        return None
    refused = _REFUSED.fullmatch(expect.group(1))
    if refused is None:
        raise ValueError(f"bad marker {line!r}: write `# expect: refused <Reason>`")
    return refused.group(1)


@dataclass(frozen=True)
class Snippet:
    """One example file or one markdown block: where it is, its text, its objects."""

    where: str  # repo-relative path, with `:line` of the block's first line for markdown
    text: str

    @property
    def source(self) -> str:
        """The file it is in (a markdown block's page)."""
        return self.where.split(":", 1)[0]

    @property
    def expect(self) -> Expectation:
        return expectation(self.text)

    def documents(self) -> list[Any]:
        return [doc for doc in yaml.safe_load_all(self.text) if doc is not None]

    def objects(self) -> list[dict[str, Any]]:
        """The project's whole objects in it."""
        return [doc for doc in self.documents() if ours(doc)]


def ours(doc: Any) -> bool:
    return isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(f"{GROUP}/")


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")


def fenced_blocks(markdown: str) -> Iterator[tuple[int, str, str]]:
    """(line number of its opening fence, info word, text) of every fenced code block; a
    block indented under a list item loses that indent."""
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, start = len(opening["indent"]), opening["fence"], i + 1
        body: list[str] = []
        i += 1
        while i < len(lines):
            line = lines[i]
            closing = _FENCE.match(line)
            if closing and not closing["info"] and closing["fence"].startswith(fence):
                break
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            i += 1
        yield start, opening["info"].lower(), "\n".join(body) + "\n"
        i += 1


def markdown_snippets(path: Path) -> list[Snippet]:
    """The ```yaml blocks of one markdown file that are the project's: a block holding a
    kafka-retention.io object, or one whose first line is a marker. A marked block that
    does not parse is kept (the test then fails on it); other YAML (Helm values, a
    Secret) is not ours to check."""
    found = []
    rel = path.relative_to(REPO).as_posix()
    for line, info, text in fenced_blocks(path.read_text()):
        if info not in ("yaml", "yml"):
            continue
        snippet = Snippet(f"{rel}:{line}", text)
        if _marked(text) or f"{GROUP}/" in text:
            found.append(snippet)
    return found


def _marked(text: str) -> bool:
    first = text.lstrip("\n").split("\n", 1)[0].strip()
    return any(p.match(first) for p in (_TENANCY, _EXPECT, _FRAGMENT))


def example_files(root: Path = REPO) -> list[Path]:
    """Every YAML file under examples/, subdirectories included, that is the project's
    (the rule of markdown blocks: a kafka-retention.io object or a marker); a file of
    other objects only (Namespaces a quick start makes) is not an example of ours."""
    files = sorted((root / "examples").rglob("*.yaml"))
    return [p for p in files if _marked(p.read_text()) or f"{GROUP}/" in p.read_text()]


def example_snippets(root: Path = REPO) -> list[Snippet]:
    return [Snippet(p.relative_to(root).as_posix(), p.read_text()) for p in example_files(root)]


def docs_snippets(root: Path = REPO) -> list[Snippet]:
    """The project's blocks in README.md and docs/**/*.md, read now: blocks written
    after this test still get checked."""
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return [s for page in pages if page.exists() for s in markdown_snippets(page)]


def all_snippets(root: Path = REPO) -> list[Snippet]:
    return example_snippets(root) + docs_snippets(root)


# --- field names the CRDs define ------------------------------------------------------


def crd_schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load(CRDS[kind].read_text())
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def schema_paths(schema: Mapping[str, Any], prefix: str = "") -> dict[str, Mapping[str, Any]]:
    """Every field path the schema defines (`topics.before.timestamp`; a list's items share
    the list's path), with its schema. A map (additionalProperties) ends a path."""
    out: dict[str, Mapping[str, Any]] = {}
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        out[path] = sub
        inner = sub.get("items", sub) if sub.get("type") == "array" else sub
        out |= schema_paths(inner, f"{path}.")
    return out


def used(value: Any, prefix: str = "") -> dict[str, list[Any]]:
    """Every field path a value sets, with the values set there."""
    out: dict[str, list[Any]] = {}
    if isinstance(value, list):
        for item in value:
            for path, values in used(item, prefix).items():
                out.setdefault(path, []).extend(values)
    elif isinstance(value, dict):
        for key, sub in value.items():
            path = f"{prefix}{key}"
            out.setdefault(path, []).extend(sub if isinstance(sub, list) else [sub])
            for inner, values in used(sub, f"{path}.").items():
                out.setdefault(inner, []).extend(values)
    return out


def _open_ended(sub: Mapping[str, Any]) -> bool:
    """A schema whose keys are free: a map, preserved unknown fields, or metadata."""
    return bool(
        "additionalProperties" in sub
        or sub.get("x-kubernetes-preserve-unknown-fields")
        or (sub.get("type") == "object" and "properties" not in sub)
    )


def unknown_fields(fragment: Any) -> list[str]:
    """The field paths of a fragment that no CRD defines, where the fragment is placed at
    the best place of the best kind: the whole object, or under any object field (so
    `spec: {...}`, `deleteConsumed: {...}` and `{name: t, before: {...}}` all fit).
    Empty when every field is one the CRDs define."""
    if not isinstance(fragment, dict | list):
        return [f"not a mapping or list: {fragment!r}"]
    paths = list(used(fragment))
    best: list[str] | None = None
    for kind in CRDS:
        defined = schema_paths(crd_schema(kind))
        roots = [""] + [f"{p}." for p, sub in defined.items() if _has_fields(sub)]
        for root in roots:
            missing = [p for p in paths if not _defined(f"{root}{p}", defined)]
            if best is None or len(missing) < len(best):
                best = missing
    return best or []


def _has_fields(sub: Mapping[str, Any]) -> bool:
    inner = sub.get("items", sub) if sub.get("type") == "array" else sub
    return "properties" in inner


def _defined(path: str, defined: Mapping[str, Mapping[str, Any]]) -> bool:
    if path in defined:
        return True
    # Below a map or metadata any key is allowed.
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:cut])
        if parent in defined:
            sub = defined[parent]
            inner = sub.get("items", sub) if sub.get("type") == "array" else sub
            return _open_ended(inner)
    return False


# --- objects as a test applies them ----------------------------------------------------


def in_namespace(docs: Iterable[Any], namespace: str) -> list[dict[str, Any]]:
    """Copies of the project's objects, the namespaced ones moved to `namespace` (a
    cluster-scoped KafkaClusterBinding stays as it is)."""
    out = []
    for doc in docs:
        if not ours(doc):
            continue
        moved = copy.deepcopy(doc)
        if moved["kind"] in NAMESPACED:
            moved.setdefault("metadata", {})["namespace"] = namespace
        out.append(moved)
    return out


def as_list(objects: list[dict[str, Any]]) -> str:
    """One `kubectl apply -f -` input holding all of them."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})


def example_manifest(path: Path, namespace: str) -> str:
    """An example file's objects as `kubectl apply -n namespace -f -` takes them: the
    examples name their namespaces (team-orders, analytics), which a test replaces."""
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    return as_list(in_namespace(docs, namespace))
