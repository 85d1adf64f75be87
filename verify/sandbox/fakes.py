"""Stand-ins for library values a check compares, where a Stub cannot serve (runs in the child).

A Stub refuses every comparison; some values are compared all the time and mean nothing
beyond themselves: torch's dtypes (`dtype == torch.float16`, `dtype in supported_dtypes`).
A platform profile names them, `"torch.float16" = "@ref:kverr.verify.sandbox.fakes:float16"`: each is
equal to itself only, hashable, and prints as the library prints it. Stdlib only (the child
imports it before the sandbox's finder, which would stub it).
"""

from __future__ import annotations

from typing import Any


class Dtype:
    """A tensor element type: `torch.bfloat16` as a check sees it (identity, name, size)."""

    def __init__(self, name: str, itemsize: int, floating: bool) -> None:
        self.name, self.itemsize, self.is_floating_point = name, itemsize, floating

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    __str__ = __repr__

    def to(self, *args: Any, **kwargs: Any) -> Dtype:
        return self

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """A validated field typed `torch.dtype` accepts these (only that library asks)."""
        from pydantic_core import core_schema

        return core_schema.is_instance_schema(cls)


float16 = half = Dtype("float16", 2, True)
bfloat16 = Dtype("bfloat16", 2, True)
float32 = float = Dtype("float32", 4, True)  # noqa: A001 - torch's own alias
float64 = double = Dtype("float64", 8, True)
float8_e4m3fn = Dtype("float8_e4m3fn", 1, True)
float8_e4m3fnuz = Dtype("float8_e4m3fnuz", 1, True)
float8_e5m2 = Dtype("float8_e5m2", 1, True)
uint8 = Dtype("uint8", 1, False)
int8 = Dtype("int8", 1, False)
int16 = Dtype("int16", 2, False)
int32 = Dtype("int32", 4, False)
int64 = long = Dtype("int64", 8, False)
bool_ = Dtype("bool", 1, False)
