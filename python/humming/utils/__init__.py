"""Helpers of the humming contract (weight quantization: humming.utils.weight)."""
