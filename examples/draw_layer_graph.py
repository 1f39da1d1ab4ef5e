"""Draw the training graph of one Transformer encoder layer, with the gradient norms on its edges.

    python examples/draw_layer_graph.py [OUT.png]      (default docs/img/transformer_layer_graph.png)

Graphviz draws the PNG where it is installed (pip install graphviz, and apt-get install graphviz or brew install
graphviz), matplotlib otherwise; the DOT text is written beside it.
"""
import sys

import numpy as np

import minitorch as mt
from transformer.config import ModelConfig
from transformer.layers import EncoderLayer


def main(out="docs/img/transformer_layer_graph.png"):
    mt.manual_seed(0)
    cfg = ModelConfig(vocab_size=100, d_model=64, n_heads=4, d_ff=256, dropout=0.1)
    layer = EncoderLayer(cfg)  # training mode: the dropout ops are part of the graph
    x = mt.randn(2, 7, cfg.d_model, requires_grad=True)
    lengths = np.array([7, 5])  # the second sentence is padded after 5 tokens
    mask = mt.tensor((np.arange(7)[None, :] < lengths[:, None])[:, None, None, :])
    loss = (layer(x, mask) ** 2).mean()
    loss.backward(retain_graph=True)
    mt.draw_graph(loss, out, names=dict(layer.named_parameters(), x=x), grads=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
