"""FP8 schemas (refused: chord serves INT4 W4A16)."""
from humming.schema.refused import Fp8InputSchema, Fp8WeightSchema

__all__ = ["Fp8InputSchema", "Fp8WeightSchema"]
