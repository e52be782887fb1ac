"""Schemas of formats chord does not compute. They exist so that every name a caller
imports resolves; building one (directly or from a checkpoint config) raises
NotImplementedError naming the format, which a serving engine reports while it loads the
model, before any forward."""
from humming.schema.base import BaseInputSchema, BaseWeightSchema, unsupported


class _Refused:
    WHAT = ""

    def __init__(self, *args, **kwargs):
        raise unsupported(self.WHAT)

    @classmethod
    def from_config(cls, config):
        raise unsupported(cls.WHAT)


class Fp8WeightSchema(_Refused, BaseWeightSchema):
    WHAT = "FP8 weights"


class Fp8InputSchema(_Refused, BaseInputSchema):
    WHAT = "FP8 activations (input quantization)"


class Mxfp4WeightSchema(_Refused, BaseWeightSchema):
    WHAT = "MXFP4 weights"


class GptOssMxfp4WeightSchema(_Refused, BaseWeightSchema):
    WHAT = "gpt-oss MXFP4 weights"


class BitnetWeightSchema(_Refused, BaseWeightSchema):
    WHAT = "BitNet ternary weights"


class ModeloptMxfp8WeightSchema(_Refused, BaseWeightSchema):
    WHAT = "ModelOpt MXFP8 weights"


class ModeloptNvfp4WeightSchema(_Refused, BaseWeightSchema):
    WHAT = "ModelOpt NVFP4 weights"


class ModeloptNvfp4InputSchema(_Refused, BaseInputSchema):
    WHAT = "ModelOpt NVFP4 activations (input quantization)"
