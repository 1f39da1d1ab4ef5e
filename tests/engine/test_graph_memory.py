"""What a recorded graph holds, measured with tracemalloc: a node keeps its output's shape and dtype and the arrays
its backward declared (save_for_backward, kept), nothing else; tools.graph_memory.saved_bytes reports exactly that."""
import gc
import tracemalloc

import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch.tools.graph_memory import saved_bytes
from transformer import ModelConfig, Transformer

MB = 2 ** 20


def traced(fn):
    """(fn()'s result, the bytes allocated by fn that are still alive when it returns)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = fn()
        gc.collect()
        return result, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_twenty_chained_adds_hold_only_the_last_output():
    x = mt.tensor(np.zeros((1024, 2048), np.float32), requires_grad=True)   # 8 MB

    def forward():
        y = x
        for _ in range(20):
            y = y + 1.0   # Add saves nothing: each intermediate array dies with its Tensor
        return y

    y, held = traced(forward)
    print(f"\ntwenty chained adds on an 8 MB tensor: {held / MB:.2f} MB held after the forward")
    assert saved_bytes(y) == 0
    assert 8 * MB <= held < 8.5 * MB   # y's own array, and the nodes (a few hundred bytes each)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((1024, 2048), np.float32))


def test_an_op_that_reads_its_output_holds_it_through_save_for_backward():
    x = mt.tensor(np.linspace(-1, 1, 256 * 1024).reshape(256, 1024), dtype=np.float64, requires_grad=True)  # 2 MB

    def forward():
        y = x
        for _ in range(10):
            y = y.tanh()   # Tanh saves its output: ten outputs alive, the last one also as y
        return y

    y, held = traced(forward)
    print(f"\nten chained tanh on a 2 MB tensor: {held / MB:.2f} MB held, saved_bytes {saved_bytes(y) / MB:.2f} MB")
    assert saved_bytes(y) == 10 * x.data.nbytes
    assert abs(held - saved_bytes(y)) < 0.02 * held
    y.sum().backward()
    expected = np.ones_like(x.data)
    value = x.data
    for _ in range(10):   # d tanh(a) = 1 - tanh(a)^2, chained by hand
        value = np.tanh(value)
        expected = expected * (1 - value ** 2)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_saved_bytes_is_what_a_small_transformer_graph_holds():
    cfg = ModelConfig(vocab_size=500, d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2,
                      dropout=0.1, max_len=64)
    mt.manual_seed(0)
    model = Transformer(cfg).train()
    rng = np.random.default_rng(0)
    src, tgt, gold = (rng.integers(4, cfg.vocab_size, size=(32, 24)) for _ in range(3))

    def loss():
        return F.cross_entropy(model(src, tgt), gold, label_smoothing=0.1)

    loss().backward()   # a warm-up step: caches (sinusoids, column ids) are made before the measurement
    out, held = traced(loss)
    saved = saved_bytes(out, exclude=list(model.parameters()))
    print(f"\nsmall Transformer: the graph holds {held / MB:.2f} MB (tracemalloc); saved_bytes {saved / MB:.2f} MB")
    assert abs(held - saved) <= 0.05 * held
