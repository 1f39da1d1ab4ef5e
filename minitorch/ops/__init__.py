"""The primitive ops, grouped by kind, each a Function: forward declares what it saves, backward returns one gradient
per input. Their reference code runs everywhere; minitorch/kernels/ holds faster versions for a device."""
from . import array_ops, conv, windows
from .array_ops import normalize_dims
from .dropout import Dropout, DropoutAdd, keep_mask, keep_threshold, random_words
from .elementwise import (Abs, Add, BiasRelu, Cast, Div, Exp, Gelu, Log, MaskedFill, Mul, Neg, Pow, Relu, Sigmoid, Sqrt,
                          Sub, Tanh, ToDevice, Where)
from .minmax import Maximum, Minimum
from .trig import Cos, Sin
from .matmul import Linear, MatMul
from .reduce import Max, Mean, Min, Norm, Sum, check_not_empty
from .shape import Cat, Embedding, Expand, GetItem, IndexAdd, MergeHeads, Permute, Reshape, SplitHeads, Stack
from .special import Erf
