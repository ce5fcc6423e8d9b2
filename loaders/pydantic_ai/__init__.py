"""The pydantic-ai flavour: ``map`` maps one message history (a checkpoint per model
response, the tape), ``flavour`` reads the JSON files and offers :class:`PydanticAIFlavour`."""

from loaders.pydantic_ai.flavour import PydanticAIFlavour

__all__ = ["PydanticAIFlavour"]
