"""A decoder-only Transformer language model (GPT-style, Radford et al. 2018): the Transformer's decoder layers
without the encoder and cross-attention, under a causal mask. Trained as a language model on one side of a corpus:
ids = [bos] + y, predicting y + [eos]."""
import numpy as np

from minitorch import backend, nn

from .layers import Embeddings, PositionalEncoding
from .masks import as_ids, causal_mask, padding_mask
from .model import Decoder, output_logits
from .state import select_rows


class DecoderOnly(nn.Module):
    """ids (B, T) -> next-token logits (B, T, vocab), each position seeing only itself and its past.

    Uses cfg.n_decoder_layers (cfg.n_encoder_layers is ignored); tie_embeddings ties the output projection to the
    token embedding. Weight initialisation: see transformer/init.py (Xavier uniform).
    """

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg.validate()
        d, V = cfg.d_model, cfg.vocab_size
        self.embed = Embeddings(V, d, cfg.pad_id)
        self.pos = PositionalEncoding(d, cfg.max_len, cfg.dropout, learned=cfg.positions == "learned")
        self.decoder = Decoder(cfg, cross=False)
        self.output = None if cfg.tie_embeddings else nn.Linear(d, V, bias=False)
        if self.output is not None:
            nn.init.normal_(self.output.weight, 0.0, d ** -0.5)

    @property
    def device(self):
        return self.embed.weight.device

    def forward(self, ids):
        """ids (B, T) (right-padded) -> logits (B, T, vocab)."""
        ids = as_ids(ids, "ids", self.device, vocab_size=self.cfg.vocab_size)
        mask = causal_mask(ids.shape[1], backend.xp_of(ids)) & padding_mask(ids, self.cfg.pad_id)  # (B, 1, T, T)
        return output_logits(self.decoder(self.pos(self.embed(ids)), mask), self.embed, self.output)

    # ----- incremental decoding (the interface transformer.decoding uses) -----
    def start_decoding(self, src):
        """src (B, P): the prefixes to continue, right-padded (P may be 0). They are read by the first decode_step,
        which runs [prev] + prefix for every row at once."""
        prefix = as_ids(src, "src", "cpu", vocab_size=self.cfg.vocab_size)
        is_pad = prefix == self.cfg.pad_id
        # right-align each prefix (pads first, tokens in order) so that every row's last token is in the last column
        order = np.argsort(~is_pad, axis=1, kind="stable")
        return {"prefix": np.take_along_axis(prefix, order, axis=1), "length": (~is_pad).sum(axis=1),
                "caches": None, "valid": None, "position": None}

    def decode_step(self, prev, state):
        """prev (B,) ids -> logits (B, vocab) for the token after prev, the new state (O(1) new positions a step,
        except the first step, which also runs the prefix)."""
        prev = as_ids(prev, "prev", "cpu", ndim=1, vocab_size=self.cfg.vocab_size)
        if state["caches"] is None:
            return self._first_step(prev, state)
        xp = backend.xp_of_device(self.device)
        valid = xp.concatenate([state["valid"], xp.ones((len(prev), 1), dtype=bool)], axis=1)
        caches = [dict(c) for c in state["caches"]]
        x = self.pos(self.embed(backend.to_device(prev[:, None], self.device)), state["position"][:, None])
        x = self.decoder(x, valid[:, None, None, :], caches=caches)
        logits = output_logits(x, self.embed, self.output)[:, 0]
        return logits, dict(state, caches=caches, valid=valid, position=state["position"] + 1)

    def _first_step(self, prev, state):
        """Run [prev] + prefix, left-padded to one length; pads are masked and not counted as positions."""
        prefix, length = state["prefix"], state["length"]
        B, P = prefix.shape
        ids = np.concatenate([np.full((B, 1), self.cfg.pad_id), prefix], axis=1)   # (B, P + 1)
        start = P - length                                                       # column of prev in each row
        ids[np.arange(B), start] = prev
        column = np.arange(P + 1)[None, :]
        valid = column >= start[:, None]
        position = np.where(valid, column - start[:, None], 0)
        # positions stay on the host: the max_len check reads them, and the embedding lookup moves them
        ids, valid = (backend.to_device(a, self.device) for a in (ids, valid))
        mask = causal_mask(P + 1, backend.xp_of(valid)) & valid[:, None, None, :]  # (B, 1, P + 1, P + 1)
        caches = [{} for _ in self.decoder.layers]
        x = self.decoder(self.pos(self.embed(ids), position), mask, caches=caches)
        logits = output_logits(x[:, -1:], self.embed, self.output)[:, 0]
        return logits, dict(state, caches=caches, valid=valid, position=position[:, -1] + 1)

    def reorder_state(self, state, index):
        """Keep or repeat the rows index (B',) int of a decoding state (beam search)."""
        return select_rows(state, as_ids(index, "index", "cpu", ndim=1))
