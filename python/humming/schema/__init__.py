"""Checkpoint schemas, by quant_method. Served (converted into HummingWeightSchema, INT4
with or without zero points, group size a multiple of 32 or channel-wise): humming,
compressed-tensors pack-quantized, GPTQ, AWQ. Every other format
has a schema class that refuses to be built, with a message naming the format."""
from humming.schema.awq import AWQWeightSchema
from humming.schema.base import SERVED, BaseInputSchema, BaseWeightSchema
from humming.schema.compressed_tensors import CompressedTensorsInputSchema, CompressedTensorsWeightSchema
from humming.schema.gptq import GPTQWeightSchema
from humming.schema.humming import HummingInputSchema, HummingWeightSchema
from humming.schema.refused import (
    BitnetWeightSchema,
    Fp8InputSchema,
    Fp8WeightSchema,
    GptOssMxfp4WeightSchema,
    ModeloptMxfp8WeightSchema,
    ModeloptNvfp4InputSchema,
    ModeloptNvfp4WeightSchema,
    Mxfp4WeightSchema,
)

WEIGHT_SCHEMA_MAP = {
    "humming": HummingWeightSchema,
    "compressed-tensors": CompressedTensorsWeightSchema,
    "gptq": GPTQWeightSchema,
    "awq": AWQWeightSchema,
    "fp8": Fp8WeightSchema,
    "mxfp4": Mxfp4WeightSchema,
    "gpt_oss_mxfp4": GptOssMxfp4WeightSchema,
    "bitnet": BitnetWeightSchema,
    "modelopt": ModeloptNvfp4WeightSchema,
}

INPUT_SCHEMA_MAP = {
    "humming": HummingInputSchema,
    "compressed-tensors": CompressedTensorsInputSchema,
    "fp8": Fp8InputSchema,
    "modelopt": ModeloptNvfp4InputSchema,
}

BaseWeightSchema.WEIGHT_SCHEMA_MAP = WEIGHT_SCHEMA_MAP
BaseInputSchema.INPUT_SCHEMA_MAP = INPUT_SCHEMA_MAP

__all__ = [
    "AWQWeightSchema", "BaseInputSchema", "BaseWeightSchema", "BitnetWeightSchema", "CompressedTensorsInputSchema",
    "CompressedTensorsWeightSchema", "Fp8InputSchema", "Fp8WeightSchema", "GPTQWeightSchema",
    "GptOssMxfp4WeightSchema", "HummingInputSchema", "HummingWeightSchema", "INPUT_SCHEMA_MAP",
    "ModeloptMxfp8WeightSchema", "ModeloptNvfp4InputSchema", "ModeloptNvfp4WeightSchema", "Mxfp4WeightSchema",
    "SERVED", "WEIGHT_SCHEMA_MAP",
]
