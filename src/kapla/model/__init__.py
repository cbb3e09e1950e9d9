"""The evaluator: validity, access counts, energy and time of schemes."""

from kapla.model.evaluate import LayerCost, evaluate
from kapla.model.validity import Validity, check_scheme

__all__ = ["LayerCost", "Validity", "check_scheme", "evaluate"]
