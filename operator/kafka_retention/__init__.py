"""Kafka Retention Operator: manages the lifetime of data in Apache Kafka from Kubernetes.

Layers, top to bottom (ARCHITECTURE.md; import-linter holds them in `make lint`):
  cli           the `kafka-retention` command, and `kubectl kafka-retention` (cli/plugin)
  handlers      thin Kopf handlers, and the wiring of adapters into the services
  services      what the operator does for each resource, through ports (services/ports)
  adapters      one module per external system (Kafka, Kubernetes, Spark, broker volumes)
  kube_objects  pure builders of the Kubernetes objects the operator writes
  core          the pure planning core, shared with the Spark jobs in spark-jobs/
"""

__version__ = "0.1.0"
