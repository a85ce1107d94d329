"""The local stack that tests, the demo and the benchmarks run on.

Three Apache Kafka brokers (KRaft, jars from Maven Central) and a Kubernetes API server
with etcd (built from Go modules), all on 127.0.0.1, no Docker. `python -m devstack`
is the command line (`make dev-up` / `make dev-down`); tests use the same classes
through the session fixtures in tests/conftest.py.
"""
