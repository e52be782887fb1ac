"""Checkpoint schemas. Supported: humming (uint4 group 32) and compressed-tensors
pack-quantized int4 group 32 symmetric; any other quant_method raises NotImplementedError
from from_config naming it."""
from humming.schema.base import BaseInputSchema, BaseWeightSchema
from humming.schema.compressed_tensors import CompressedTensorsInputSchema, CompressedTensorsWeightSchema
from humming.schema.humming import HummingInputSchema, HummingWeightSchema

WEIGHT_SCHEMA_MAP = {
    "humming": HummingWeightSchema,
    "compressed-tensors": CompressedTensorsWeightSchema,
}

INPUT_SCHEMA_MAP = {
    "humming": HummingInputSchema,
    "compressed-tensors": CompressedTensorsInputSchema,
}

BaseWeightSchema.WEIGHT_SCHEMA_MAP = WEIGHT_SCHEMA_MAP
BaseInputSchema.INPUT_SCHEMA_MAP = INPUT_SCHEMA_MAP

__all__ = [
    "BaseInputSchema", "BaseWeightSchema", "CompressedTensorsInputSchema", "CompressedTensorsWeightSchema",
    "HummingInputSchema", "HummingWeightSchema", "INPUT_SCHEMA_MAP", "WEIGHT_SCHEMA_MAP",
]
