"""Kopf handlers. Importing this package registers every handler with Kopf."""

from kafka_retention.handlers import purge, retention, settings

__all__ = ["purge", "retention", "settings"]
