"""Facts of the sample histories the app's tests check (the store is ``sample_store``)."""

from __future__ import annotations

CRASHED = "crash-at-step-7"
"""Crashed right after issuing a refund: the head (step 6) holds it pending."""
REFUND_KEY = "refund-T-1077-ORD-1077"
"""The pending refund's idempotency key."""
DEPLOY = "deploy-mid-run"
"""The model version changes at step 5."""
REEXECUTED = "resume-reexecuted-email"
"""Step 9 was written twice from the checkpoint of step 8: a fork."""
