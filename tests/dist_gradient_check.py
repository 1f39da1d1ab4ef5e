"""Run under mpirun by tests/training/test_distributed.py: the summed gradients of the ranks' shares of a batch equal
the gradient of the whole batch's mean loss computed in one process (float64, so that only rounding differs).

    python dist_gradient_check.py N_SENTENCES [cpu|cuda]    prints "ok RANK" on each rank, or raises
(cuda: one GPU per rank, the sums through NCCL)
"""
import sys

import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch import backend, distributed
from train.data.batching import training_batch
from train.cli.parallel import share
from train.data.tokenizer import PAD_ID
from transformer import ModelConfig, Transformer


def batch_loss(model, src_ids, tgt_ids, n_tokens=None):
    device = backend.device_of(next(model.parameters()).data)
    src, tgt_in, tgt_out = (mt.tensor(a, device=device) for a in training_batch(src_ids, tgt_ids))
    logits = model(src, tgt_in)
    if n_tokens is None:
        return F.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, label_smoothing=0.1)
    return F.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, label_smoothing=0.1,
                           reduction="sum") / n_tokens


def main(n_sentences, device="cpu"):
    world = distributed.init(device)
    rng = np.random.default_rng(0)   # the same batch on every rank
    src_ids = [rng.integers(4, 50, size=rng.integers(1, 9)).tolist() for _ in range(n_sentences)]
    tgt_ids = [rng.integers(4, 50, size=rng.integers(1, 9)).tolist() for _ in range(n_sentences)]
    mt.manual_seed(world.rank)       # different weights on each rank, until the broadcast
    model = Transformer(ModelConfig(vocab_size=50, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                                    n_decoder_layers=1, dropout=0.0, max_len=16))
    model.to(device)
    for p in model.parameters():
        p.data = p.data.astype("float64")
    distributed.broadcast_parameters(model.parameters(), world)

    # the reference: the whole batch's mean loss, in this one process
    loss = batch_loss(model, src_ids, tgt_ids)
    loss.backward()
    expected = {name: backend.to_numpy(p.grad.data) for name, p in model.named_parameters()}
    expected_loss = float(loss.item())
    model.zero_grad()
    for p in model.parameters():
        p.grad = None

    # the data-parallel step: this rank's share, its loss over the whole batch's token count, then the sum
    mine = share(list(range(n_sentences)), world)
    n_tokens = sum(len(y) + 1 for y in tgt_ids)
    local = 0.0
    if mine:
        loss = batch_loss(model, [src_ids[i] for i in mine], [tgt_ids[i] for i in mine], n_tokens)
        loss.backward()
        local = float(loss.item())
    summed = distributed.GradientSync(model.parameters(), world)([local, 1])
    summed_loss, n_ranks = backend.to_numpy(summed).tolist()
    assert n_ranks == world.size, (n_ranks, world.size)
    assert abs(summed_loss - expected_loss) <= 1e-12 * abs(expected_loss), (summed_loss, expected_loss)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(backend.to_numpy(p.grad.data), expected[name], rtol=1e-10, atol=1e-13, err_msg=name)
    print(f"ok {world.rank}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), *sys.argv[2:])
