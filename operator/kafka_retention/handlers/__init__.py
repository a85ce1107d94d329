"""Kopf handlers. Importing this package registers every handler with Kopf."""

from kafka_retention.handlers import erasure, purge, retention, settings

__all__ = ["erasure", "purge", "retention", "settings"]
