"""Kafka Retention Operator: manages the lifetime of data in Apache Kafka from Kubernetes.

Layers, top to bottom (enforced by import-linter in `make lint`):
  cli       the `kafka-retention` command
  handlers  thin Kopf handlers: parse spec, call a service, write status
  services  reconcile logic for each custom resource
  adapters  one module per external system (Kafka, Kubernetes exec, Spark)
  core      the pure planning core, shared with the Spark jobs in spark-jobs/
"""

__version__ = "0.1.0"
