"""How a test shares the stack in make test's parallel phase (hack/testrun.py runs it with
pytest-xdist, `--dist loadgroup`; tests/conftest.py keeps each other module on one worker).
Tests that cannot share the stack with anything are marked `serial` instead."""

from __future__ import annotations

import pytest

# Tests that install the operator in kafka-retention-system (cluster-wide RBAC, the local
# overlay's host ports on the node, the admission policy) or delete that namespace. They
# may run beside every other test, whose operators watch their own namespaces, but never
# beside each other: one worker runs them one after another, in collection order.
OPERATOR_NAMESPACE = pytest.mark.xdist_group("kafka-retention-system")
