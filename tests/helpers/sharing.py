"""How a test file shares the stack in make test's parallel phase: hack/testrun.py runs it
with pytest-xdist, `--dist loadfile`, and tests/conftest.py schedules each file on one
worker, and each group below on one worker, its files one after another in collection
order. Tests that cannot share the stack with anything are marked `serial` instead."""

from __future__ import annotations

# Files that install the operator in kafka-retention-system (cluster-wide RBAC, the local
# overlay's host ports on the node, the admission policy) or delete that namespace. They
# may run beside every other test, whose operators watch their own namespaces, but never
# beside each other.
OPERATOR_NAMESPACE = (
    "tests/integration/test_manifests.py",
    "tests/integration/test_rbac.py",
    "tests/integration/test_readme_install.py",
    "tests/e2e/test_in_cluster.py",
    "tests/e2e/test_tenancy_in_cluster.py",
)

GROUP_OF_FILE = dict.fromkeys(OPERATOR_NAMESPACE, "kafka-retention-system")
