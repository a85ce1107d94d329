"""Kopf handlers. Importing this package registers every handler with Kopf."""

from kafka_retention.handlers import settings

__all__ = ["settings"]
