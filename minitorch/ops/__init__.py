"""Primitive ops, grouped by kind. Each is a Function: forward saves what backward needs."""
from .elementwise import (Abs, Add, BiasRelu, Cast, Div, Dropout, DropoutAdd, Exp, Gelu, Log, MaskedFill, Mul, Neg,
                          Pow, Relu, Sigmoid, Sqrt, Sub, Tanh, ToDevice, Where)
from .matmul import MatMul
from .reduce import Max, Mean, Sum, normalize_dims
from .shape import Cat, Embedding, Expand, GetItem, IndexAdd, Permute, Reshape, Stack
from .special import Erf
