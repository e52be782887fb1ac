"""Data type descriptors, by name: integers (u)intN and floats floatNeXmY."""
import dataclasses
import re

import torch


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class DataType:
    num_bits: int
    is_signed: bool = True
    is_integer_type: bool = False
    is_floating_point_type: bool = False

    @classmethod
    def from_str(cls, s) -> "DataType":
        if isinstance(s, DataType):
            return s
        s = str(s).lower().strip()
        if "float" in s or s == "half":
            return FloatingPointType.from_str(s)
        if "int" in s:
            return IntegerType.from_str(s)
        raise ValueError(f"humming.dtypes: unknown data type '{s}'")

    @classmethod
    def from_any(cls, value) -> "DataType":
        """A DataType from a DataType, its name, or a torch dtype."""
        if isinstance(value, torch.dtype):
            return cls.from_torch_dtype(value)
        return cls.from_str(value)

    @classmethod
    def from_torch_dtype(cls, torch_dtype: torch.dtype) -> "DataType":
        name = str(torch_dtype).replace("torch.", "")
        if name in _TORCH_NAMES:
            return _TORCH_NAMES[name]
        if "float" in name:
            return FloatingPointType.from_str(name.replace("fnuz", "").replace("fnu", "").replace("fn", ""))
        if "int" in name:
            return IntegerType.from_str(name)
        raise ValueError(f"humming.dtypes: no data type for {torch_dtype}")

    def to_str(self) -> str:
        raise NotImplementedError

    def __str__(self):
        return self.to_str()

    def __repr__(self):
        return self.to_str()

    def __hash__(self):
        return hash(self.to_str())

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = DataType.from_str(other)
            except ValueError:
                return False
        return isinstance(other, DataType) and self.to_str() == other.to_str()


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class IntegerType(DataType):
    is_integer_type: bool = True

    @classmethod
    def from_str(cls, s) -> "IntegerType":
        if isinstance(s, IntegerType):
            return s
        m = re.fullmatch(r"(u?)int(\d+)", str(s).lower())
        if not m:
            raise ValueError(f"humming.dtypes: invalid integer type '{s}'")
        return cls(num_bits=int(m.group(2)), is_signed=m.group(1) == "")

    def to_str(self) -> str:
        return ("int" if self.is_signed else "uint") + str(self.num_bits)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class FloatingPointType(DataType):
    exponent_bits: int = 0
    mantissa_bits: int = 0
    is_floating_point_type: bool = True

    @classmethod
    def from_str(cls, s) -> "FloatingPointType":
        if isinstance(s, FloatingPointType):
            return s
        s = str(s).lower()
        named = {"float16": (16, 5, 10), "half": (16, 5, 10), "bfloat16": (16, 8, 7), "float32": (32, 8, 23)}
        if s in named:
            bits, e, m = named[s]
        else:
            match = re.fullmatch(r"float(\d+)_?e(\d+)m(\d+)", s)
            if not match:
                raise ValueError(f"humming.dtypes: invalid floating point type '{s}'")
            bits, e, m = (int(g) for g in match.groups())
        sign = bits - e - m
        if sign not in (0, 1):
            raise ValueError(f"humming.dtypes: '{s}' has {sign} sign bits")
        return cls(num_bits=bits, is_signed=sign == 1, exponent_bits=e, mantissa_bits=m)

    def to_str(self) -> str:
        name = f"float{self.num_bits}e{self.exponent_bits}m{self.mantissa_bits}"
        return {"float16e5m10": "float16", "float16e8m7": "bfloat16", "float32e8m23": "float32"}.get(name, name)


uint1 = IntegerType.from_str("uint1")
uint2 = IntegerType.from_str("uint2")
uint3 = IntegerType.from_str("uint3")
uint4 = IntegerType.from_str("uint4")
uint5 = IntegerType.from_str("uint5")
uint6 = IntegerType.from_str("uint6")
uint7 = IntegerType.from_str("uint7")
uint8 = IntegerType.from_str("uint8")
int4 = IntegerType.from_str("int4")
int8 = IntegerType.from_str("int8")
int32 = IntegerType.from_str("int32")

float4e0m3 = FloatingPointType.from_str("float4e0m3")
float4e2m1 = FloatingPointType.from_str("float4e2m1")
float6e2m3 = FloatingPointType.from_str("float6e2m3")
float6e3m2 = FloatingPointType.from_str("float6e3m2")
float8e3m4 = FloatingPointType.from_str("float8e3m4")
float8e4m3 = FloatingPointType.from_str("float8e4m3")
float8e5m2 = FloatingPointType.from_str("float8e5m2")
float8e8m0 = FloatingPointType.from_str("float8e8m0")
float16 = FloatingPointType.from_str("float16")
bfloat16 = FloatingPointType.from_str("bfloat16")
float32 = FloatingPointType.from_str("float32")

_TORCH_NAMES = {
    "float16": float16, "half": float16, "bfloat16": bfloat16, "float32": float32, "float": float32,
    "float8_e4m3fn": float8e4m3, "float8_e5m2": float8e5m2, "float8_e8m0fnu": float8e8m0,
    "int8": int8, "uint8": uint8, "int32": int32,
}

torch_dtype_map = {
    int8: torch.int8,
    uint8: torch.uint8,
    int32: torch.int32,
    float16: torch.float16,
    bfloat16: torch.bfloat16,
    float32: torch.float32,
    float8e4m3: torch.float8_e4m3fn,
    float8e5m2: torch.float8_e5m2,
}
if hasattr(torch, "float8_e8m0fnu"):
    torch_dtype_map[float8e8m0] = torch.float8_e8m0fnu
