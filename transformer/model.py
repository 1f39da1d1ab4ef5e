"""The encoder-decoder Transformer (Vaswani et al. 2017, "Attention Is All You Need")."""
import minitorch as mt
import minitorch.functional as F
from minitorch import nn

from .inference import inference
from .layers import DecoderLayer, Embeddings, EncoderLayer, PositionalEncoding
from .masks import as_ids, causal_mask, padding_mask
from .state import select_rows


class Encoder(nn.Module):
    """N encoder layers, then (pre-LN only) a final LayerNorm."""

    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers)])
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm == "pre" else None

    def forward(self, x, mask):
        """x (B, S, d_model), mask (B, 1, 1, S) -> memory (B, S, d_model)."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x) if self.norm is not None else x


class Decoder(nn.Module):
    """N decoder layers, then (pre-LN only) a final LayerNorm."""

    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers)])
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm == "pre" else None

    def forward(self, x, tgt_mask, memory=None, src_mask=None, memory_kv=None, caches=None, weights=None):
        """x (B, T, d_model) -> (B, T, d_model).

        Cross-attention reads memory (B, S, d_model), or memory_kv, each layer's (keys, values) computed beforehand;
        caches: one key/value cache dict per layer (incremental decoding); weights: collects cross-attention weights.
        """
        for i, layer in enumerate(self.layers):
            kv = memory_kv[i] if memory_kv is not None else layer.cross_attn.memory_kv(memory, packed=True)
            x = layer(x, tgt_mask, kv, src_mask, caches[i] if caches is not None else None, weights)
        return self.norm(x) if self.norm is not None else x


def output_logits(x, embeddings, output):
    """x (B, T, d_model) -> logits (B, T, vocab): by the (tied) embedding matrix, or by a separate projection."""
    return output(x) if output is not None else F.linear(x, embeddings.weight)


class Transformer(nn.Module):
    """Encoder-decoder Transformer: src (B, S), tgt_in (B, T) -> next-token logits (B, T, vocab).

    With cfg.tie_embeddings, one token embedding serves the source, the target and the output projection (section
    3.4; this needs the joint vocabulary). Weight initialisation: see transformer/init.py (Xavier uniform).
    """

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg.validate()
        d, V, pad = cfg.d_model, cfg.vocab_size, cfg.pad_id
        self.src_embed = Embeddings(V, d, pad)
        self.tgt_embed = self.src_embed if cfg.tie_embeddings else Embeddings(V, d, pad)
        self.output = None if cfg.tie_embeddings else nn.Linear(d, V, bias=False)
        if self.output is not None:
            nn.init.normal_(self.output.weight, 0.0, d ** -0.5)
        learned = cfg.positions == "learned"
        self.src_pos = PositionalEncoding(d, cfg.max_len, cfg.dropout, learned)
        self.tgt_pos = PositionalEncoding(d, cfg.max_len, cfg.dropout, learned)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)

    @property
    def device(self):
        return self.src_embed.weight.device

    def encode(self, src):
        """src (B, S) ids -> memory (B, S, d_model), src_mask (B, 1, 1, S)."""
        src = as_ids(src, "src", self.device, vocab_size=self.cfg.vocab_size)
        src_mask = padding_mask(src, self.cfg.pad_id)
        return self.encoder(self.src_pos(self.src_embed(src)), src_mask), src_mask

    def decode(self, tgt_in, memory, src_mask, weights=None):
        """tgt_in (B, T) ids, memory (B, S, d_model) -> logits (B, T, vocab), each position seeing only its past."""
        tgt_in = as_ids(tgt_in, "tgt_in", self.device, vocab_size=self.cfg.vocab_size)
        if tgt_in.shape[0] != memory.shape[0]:
            raise ValueError(f"tgt_in has {tgt_in.shape[0]} sentences but src has {memory.shape[0]}")
        xp = mt.backend.xp_of(tgt_in)
        tgt_mask = causal_mask(tgt_in.shape[1], xp) & padding_mask(tgt_in, self.cfg.pad_id)   # (B, 1, T, T)
        x = self.decoder(self.tgt_pos(self.tgt_embed(tgt_in)), tgt_mask, memory, src_mask, weights=weights)
        return output_logits(x, self.tgt_embed, self.output)

    def forward(self, src, tgt_in):
        """src (B, S), tgt_in (B, T) = [bos] + y (teacher forcing) -> logits (B, T, vocab) predicting y + [eos]."""
        memory, src_mask = self.encode(src)
        return self.decode(tgt_in, memory, src_mask)

    # ----- incremental decoding (the interface transformer.decoding uses) -----
    def start_decoding(self, src):
        """Encode src (B, S) once -> the decoding state: cross-attention keys/values per layer, empty caches."""
        memory, src_mask = self.encode(src)
        return {"src_mask": src_mask, "position": 0,
                "memory_kv": [layer.cross_attn.memory_kv(memory) for layer in self.decoder.layers],
                "caches": [{} for _ in self.decoder.layers]}

    def decode_step(self, prev, state):
        """prev (B,) ids, the last token of each sentence -> next-token logits (B, vocab), the new state.

        Only prev's position is computed: the self-attention keys and values of earlier ones come from the cache.
        """
        prev = as_ids(prev, "prev", self.device, ndim=1, vocab_size=self.cfg.vocab_size)
        caches = [dict(c) for c in state["caches"]]  # the caller's state stays valid
        x = self.tgt_pos(self.tgt_embed(prev[:, None]), state["position"])
        x = self.decoder(x, None, src_mask=state["src_mask"], memory_kv=state["memory_kv"], caches=caches)
        logits = output_logits(x, self.tgt_embed, self.output)
        return logits[:, 0], dict(state, caches=caches, position=state["position"] + 1)

    def reorder_state(self, state, index):
        """Keep or repeat the sentences index (B',) int of a decoding state (beam search)."""
        return select_rows(state, as_ids(index, "index", "cpu", ndim=1))

    def cross_attention(self, src, tgt_in):
        """Cross-attention weights: a NumPy array (B, n_heads, T, S) for each decoder layer (eval mode, no grad)."""
        weights = []
        with inference(self):
            memory, src_mask = self.encode(src)
            self.decode(tgt_in, memory, src_mask, weights=weights)
        return [w.numpy() for w in weights]
