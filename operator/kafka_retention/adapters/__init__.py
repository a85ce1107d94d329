"""Adapters: the only modules that talk to external systems, one module per system."""
