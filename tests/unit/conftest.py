"""Hypothesis on a shared machine: make test runs the unit tests niced beside the stack's
serial and paired tests, where generating an input or running one example may take
longer for reasons that are not the test's (a health check failed there once: "input
generation is slow", 7 inputs in 1 s). No time limit and no slowness check, then; what
each property asserts, and how many examples it tries, are unchanged."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("shared-machine")
