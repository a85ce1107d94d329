"""The project's Argo CD health checks (manifests/argocd), run as Argo CD runs them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tests.helpers.paths import MANIFESTS

ARGOCD = MANIFESTS / "argocd"


def argocd_health(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(status, message) of the object by the project's Argo CD health check, run on a
    Lua 5.1 interpreter as Argo CD runs it (gopher-lua implements 5.1)."""
    from lupa import lua51

    script = (ARGOCD / f"{str(obj['kind']).lower()}-health.lua").read_text()
    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(json.loads(json.dumps(obj)), recursive=True)
    hs = lua.execute(script)
    return str(hs["status"]), str(hs["message"] or "")
