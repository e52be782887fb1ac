"""ModelOpt schemas (refused: chord serves INT4 W4A16)."""
from humming.schema.refused import ModeloptMxfp8WeightSchema, ModeloptNvfp4InputSchema, ModeloptNvfp4WeightSchema

__all__ = ["ModeloptMxfp8WeightSchema", "ModeloptNvfp4InputSchema", "ModeloptNvfp4WeightSchema"]
