"""Reconcile services: what the operator does for each resource, free of Kopf specifics."""
