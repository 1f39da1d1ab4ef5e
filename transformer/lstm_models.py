"""The LSTM baselines: an encoder-decoder whose encoder's final states start the decoder (Sutskever et al. 2014),
and one with a bidirectional encoder and an additive-attention decoder (Bahdanau et al. 2015).

Both have the Transformer's interface, so the same training loop, checkpoints, evaluation and decoding serve them:
forward(src, tgt_in) -> logits (B, T, vocab) (teacher forcing), and start_decoding / decode_step / reorder_state for
greedy and beam search. Tokens are embedded as in the Transformer (N(0, 1/d_embed), times sqrt(d_embed)); the
decoder's features go through a linear layer to d_embed and then, with tie_embeddings, through the transposed
embedding matrix to the logits.
"""
import minitorch as mt
from minitorch import nn

from .additive_attention import AdditiveAttention
from .inference import inference
from .layers import Embeddings
from .masks import as_ids
from .model import output_logits
from .rnn import LSTM
from .state import select_rows


class _LSTMEncoderDecoder(nn.Module):
    """What both models share: embeddings, the output layer, id checks and reordering of the decoding state."""

    def __init__(self, cfg, d_features):
        super().__init__()
        self.cfg = cfg.validate()
        V, E, pad = cfg.vocab_size, cfg.d_embed, cfg.pad_id
        self.src_embed = Embeddings(V, E, pad)
        self.tgt_embed = self.src_embed if cfg.tie_embeddings else Embeddings(V, E, pad)
        self.out_proj = nn.Linear(d_features, E)        # decoder features -> d_embed
        self.output = None if cfg.tie_embeddings else nn.Linear(E, V, bias=False)
        if self.output is not None:
            nn.init.normal_(self.output.weight, 0.0, E ** -0.5)
        self.dropout = nn.Dropout(cfg.dropout)

    @property
    def device(self):
        return self.src_embed.weight.device

    def ids(self, ids, name, ndim=2):
        """Checked int64 ids on the model's device; a sequence must have 1 to max_len positions."""
        ids = as_ids(ids, name, self.device, ndim=ndim, vocab_size=self.cfg.vocab_size)
        if ndim == 2 and not 1 <= ids.shape[1] <= self.cfg.max_len:
            raise ValueError(f"{name}: sequences must have 1 to max_len ({self.cfg.max_len}) positions, got shape "
                             f"{tuple(ids.shape)}")
        return ids

    def real_tokens(self, ids):
        """ids (B, S) -> bool Tensor (B, S), True where the token is not padding."""
        return mt.tensor(ids != self.cfg.pad_id)

    def logits(self, features):
        """Decoder features (..., d_features) -> next-token logits (..., vocab)."""
        return output_logits(self.out_proj(self.dropout(features)), self.tgt_embed, self.output)

    def check_step(self, prev, state):
        prev = self.ids(prev, "prev", ndim=1)
        if state["position"] >= self.cfg.max_len:
            raise ValueError(f"decode_step: the output would pass max_len ({self.cfg.max_len}) tokens")
        return prev

    def reorder_state(self, state, index):
        """Keep or repeat the sentences index (B',) int of a decoding state (beam search)."""
        return select_rows(state, as_ids(index, "index", "cpu", ndim=1))


class LSTMSeq2Seq(_LSTMEncoderDecoder):
    """n_layers LSTM encoder, n_layers LSTM decoder; the encoder's final (h, c) of each layer (after the last real
    source token) start the decoder's layer. The source is read in its own order (Sutskever et al. reversed it)."""

    def __init__(self, cfg):
        super().__init__(cfg, d_features=cfg.d_hidden)
        E, H, L, p = cfg.d_embed, cfg.d_hidden, cfg.n_layers, cfg.dropout
        self.encoder = LSTM(E, H, L, dropout=p)
        self.decoder = LSTM(E, H, L, dropout=p)

    def encode(self, src):
        """src (B, S) ids -> the encoder's final [(h, c)] per layer, each (B, d_hidden)."""
        src = self.ids(src, "src")
        _, state = self.encoder(self.dropout(self.src_embed(src)), keep=self.real_tokens(src))
        return state

    def forward(self, src, tgt_in):
        """src (B, S), tgt_in (B, T) = [bos] + y (teacher forcing) -> logits (B, T, vocab) predicting y + [eos]."""
        state = self.encode(src)
        tgt_in = self.ids(tgt_in, "tgt_in")
        if tgt_in.shape[0] != state[0][0].shape[0]:
            raise ValueError(f"tgt_in has {tgt_in.shape[0]} sentences but src has {state[0][0].shape[0]}")
        out, _ = self.decoder(self.dropout(self.tgt_embed(tgt_in)), state)
        return self.logits(out)

    def start_decoding(self, src):
        """Encode src (B, S) once -> the decoding state: the decoder's (h, c) per layer and the position."""
        return {"layers": self.encode(src), "position": 0}

    def decode_step(self, prev, state):
        """prev (B,) ids, the last token of each sentence -> next-token logits (B, vocab), the new state."""
        prev = self.check_step(prev, state)
        h, layers = self.decoder.step(self.dropout(self.tgt_embed(prev)), state["layers"])
        return self.logits(h), {"layers": layers, "position": state["position"] + 1}


class LSTMAttnSeq2Seq(_LSTMEncoderDecoder):
    """Bidirectional n_layers LSTM encoder (d_hidden / 2 per direction), n_layers LSTM decoder with additive
    attention, as in Bahdanau et al. (2015), not Luong's input feeding:

        c_t = attention(s_{t-1}, h_1..h_S)       the query is the previous top-layer decoder state (eq. 6)
        s_t = LSTM([E y_{t-1}; c_t], s_{t-1})    the context enters the first decoder layer with the previous token
        logits_t = E W_o [s_t; c_t]              output from the new state and the context (eq. 4: g(y_{t-1}, s_t,
                                                 c_t)), a linear layer where the paper has maxout, then E^T (tied)
    h_j = [h_fwd_j; h_bwd_j] is the top encoder layer's output at source position j. Each decoder layer starts from
    the final states of the encoder layer below it, [h_fwd after the last token; h_bwd after the first].
    """

    def __init__(self, cfg):
        if cfg.d_hidden % 2:
            raise ValueError(f"LSTMAttnSeq2Seq: LSTMConfig.d_hidden must be even (each encoder direction gets "
                             f"d_hidden / 2), got {cfg.d_hidden}")
        super().__init__(cfg, d_features=2 * cfg.d_hidden)
        E, H, L, p = cfg.d_embed, cfg.d_hidden, cfg.n_layers, cfg.dropout
        self.encoder = LSTM(E, H // 2, L, bidirectional=True, dropout=p)
        self.decoder = LSTM(E + H, H, L, dropout=p)
        self.attention = AdditiveAttention(H, H, H)

    def start_decoding(self, src):
        """Encode src (B, S) once -> the decoding state: encoder outputs (memory) and their attention keys, which
        source positions are real, the decoder's (h, c) per layer, the position."""
        src = self.ids(src, "src")
        keep = self.real_tokens(src)
        memory, layers = self.encoder(self.dropout(self.src_embed(src)), keep=keep)
        return {"memory": memory, "keys": self.attention.keys(memory), "keep": keep, "layers": layers, "position": 0}

    def step(self, embedded, state):
        """embedded (B, d_embed): the previous token's embedding -> features [s_t; c_t] (B, 2 d_hidden), attention
        weights (B, S), the new state."""
        context, weights = self.attention(state["layers"][-1][0], state["keys"], state["memory"], state["keep"])
        s, layers = self.decoder.step(mt.cat([embedded, context], dim=-1), state["layers"])
        return mt.cat([s, context], dim=-1), weights, dict(state, layers=layers, position=state["position"] + 1)

    def run_decoder(self, src, tgt_in):
        """Teacher-forced decoder: -> features (B, T, 2 d_hidden), attention weights: T tensors (B, S)."""
        state = self.start_decoding(src)
        tgt_in = self.ids(tgt_in, "tgt_in")
        if tgt_in.shape[0] != state["memory"].shape[0]:
            raise ValueError(f"tgt_in has {tgt_in.shape[0]} sentences but src has {state['memory'].shape[0]}")
        embedded = self.dropout(self.tgt_embed(tgt_in))
        features, weights = [], []
        for t in range(tgt_in.shape[1]):
            f, w, state = self.step(embedded[:, t], state)
            features.append(f)
            weights.append(w)
        return mt.stack(features, dim=1), weights

    def forward(self, src, tgt_in):
        """src (B, S), tgt_in (B, T) = [bos] + y (teacher forcing) -> logits (B, T, vocab) predicting y + [eos]."""
        return self.logits(self.run_decoder(src, tgt_in)[0])

    def decode_step(self, prev, state):
        """prev (B,) ids, the last token of each sentence -> next-token logits (B, vocab), the new state."""
        prev = self.check_step(prev, state)
        features, _, state = self.step(self.dropout(self.tgt_embed(prev)), state)
        return self.logits(features), state

    def cross_attention(self, src, tgt_in):
        """Attention weights as [a NumPy array (B, 1, T, S)]: one "layer" with one "head" (eval mode, no grad)."""
        with inference(self):
            weights = self.run_decoder(src, tgt_in)[1]
        return [mt.stack(weights, dim=1).numpy()[:, None]]
