"""What activation checkpointing saves on the Transformer: bytes kept for backward, with and without checkpointing
every encoder and decoder layer (mt.utils.checkpoint), against sentence length.

    python examples/checkpoint_memory.py [--batch 16] [--lengths 16 32 64 128]

The model is the `small` preset's (d_model 256, 4 heads, d_ff 1024, 3+3 layers, pre-LN, vocabulary 4,000). Without
checkpointing each layer keeps its attention weights, (B, h, T, T) per attention, whose bytes grow with the square
of the length, and about a dozen (B, T, d) activations; checkpointed, a layer keeps its input (B, T, d) only and
runs its forward again during backward. Prints the bytes of activations saved
(minitorch.tools.graph_memory.saved_bytes, each buffer once, the parameters left out), the time of one forward and
backward, and the largest difference between the two runs' gradients (the recomputation replays dropout's draws).
"""
import argparse
import time

import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch.tools.graph_memory import saved_bytes
from minitorch.utils.checkpoint import checkpoint
from transformer import ModelConfig, Transformer

SMALL = dict(vocab_size=4000, d_model=256, n_heads=4, d_ff=1024, n_encoder_layers=3, n_decoder_layers=3,
             max_len=512, norm="pre")


def checkpoint_layers(model):
    """Make each encoder and decoder layer of model run through checkpoint (their tensors passed as arguments)."""
    for layer in model.encoder.layers:
        layer.forward = (lambda f: lambda x, mask: checkpoint(f, x, mask))(layer.forward)
    for layer in model.decoder.layers:
        def forward(x, tgt_mask, kv=None, src_mask=None, cache=None, weights=None, f=layer.forward):
            return checkpoint(lambda x, k, v: f(x, tgt_mask, (k, v), src_mask, cache, weights), x, *kv)
        layer.forward = forward


def step(model, src, tgt_in, tgt_out):
    """Loss, bytes saved for backward, seconds of forward + backward, and the gradients."""
    model.zero_grad()
    start = time.perf_counter()
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
    kept = saved_bytes(loss, exclude=model.parameters())   # the weights are kept in both cases
    loss.backward()
    seconds = time.perf_counter() - start
    return kept, seconds, [p.grad.numpy().copy() for p in model.parameters()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64, 128])
    args = parser.parse_args(argv)
    plain, checkpointed = Transformer(ModelConfig(**SMALL)), Transformer(ModelConfig(**SMALL))
    checkpointed.load_state_dict(plain.state_dict())
    checkpoint_layers(checkpointed)
    rng = np.random.default_rng(0)
    print(f"Transformer of the small preset, batch {args.batch}, float32, source length = target length T")
    print(f"{'T':>5} {'saved: plain':>14} {'checkpointed':>14} {'ratio':>7} {'s plain':>8} {'s ckpt':>8} "
          f"{'max |grad diff|':>16}")
    for T in args.lengths:
        ids = rng.integers(4, SMALL["vocab_size"], size=(3, args.batch, T))
        src, tgt_in, tgt_out = (mt.tensor(a) for a in ids)
        results = []
        for model in (plain, checkpointed):
            mt.manual_seed(T)   # the same dropout masks in both runs
            model.train()
            results.append(step(model, src, tgt_in, tgt_out))
        (kept_p, s_p, g_p), (kept_c, s_c, g_c) = results
        diff = max(float(np.abs(a - b).max()) for a, b in zip(g_p, g_c))
        print(f"{T:5d} {kept_p / 2**20:11.1f} MB {kept_c / 2**20:11.1f} MB {kept_p / kept_c:6.1f}x "
              f"{s_p:8.2f} {s_c:8.2f} {diff:16.2e}")


if __name__ == "__main__":
    main()
