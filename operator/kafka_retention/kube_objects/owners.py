"""Owner references: what the operator writes goes when the object it serves goes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Owner:
    api_version: str
    kind: str
    name: str
    uid: str

    def reference(self, controller: bool = True) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": controller,
            "blockOwnerDeletion": True,
        }
