"""The Temporal flavour: workflow histories exported as JSON.

``decode`` reads event types, attributes and payloads, ``map`` maps one history onto
checkpoints (one an event), effects and the tape (one an activity) and a status, and
``flavour`` ties them into the :class:`TemporalFlavour` the registry offers. docs/temporal.md
gives the mapping.
"""

from loaders.temporal.flavour import TemporalFlavour

__all__ = ["TemporalFlavour"]
