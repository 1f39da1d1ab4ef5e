"""Faster implementations of ops for one device, apart from the reference ops a learner reads.

Each module holds the kernels of one op family: GPU kernels written with `backend.fuse` (one launch each, bodies the
CuPy stand-in in tests/ runs); the CPU runs the reference ops (tests/test_doc_facts.py checks that every kernel
registered is for "cuda"). Each is a subclass of its reference op registered with `@kernel(Op, device)`;
`Function.apply` (core/function.py) picks it by the inputs' device, and `minitorch.core.reference_ops()` turns them all
off. tests/engine/test_kernels.py runs every registered kernel against its reference: values, first and second
derivatives.
"""
from . import activations, attention, cross_entropy, dropout, layer_norm, lstm_cell, softmax
