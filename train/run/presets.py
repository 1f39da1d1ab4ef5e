"""Named training set-ups: a model size plus the training settings that suit it.

Every setting here can be overridden by the fit command's flag of the same name; the run folder's config.json
records what a run actually used.
"""
from dataclasses import asdict, dataclass, field

# evaluate's and translate's defaults where a preset has not chosen its own on validation (and for older runs)
DECODING = {"checkpoint": "best", "beam": 5, "length_penalty": 0.6}


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    model: dict = field(default_factory=dict)   # ModelConfig fields other than vocab_size
    lstm: dict = field(default_factory=dict)    # LSTMConfig fields for --model lstm / lstm-attn: about as many
                                                # parameters as `model` at this vocabulary size
    corpus: str = "multi30k"                    # "multi30k" (or --data-dir) or "demo" (generated)
    src: str = "de"
    tgt: str = "en"
    vocab_size: int = 8000                      # an upper bound; small corpora give fewer pieces
    batch_tokens: int = 4096                    # padded tokens per batch, counted on the longer side
    epochs: int = 10
    lr: float = 1e-3                            # the peak learning rate, reached at the end of warmup
    warmup: int = 4000                          # steps of linear warmup; then lr decays as 1/sqrt(step)
    label_smoothing: float = 0.1
    weight_decay: float = 0.0                   # decoupled (AdamW); 0 = plain Adam
    clip_norm: float = 1.0
    avg_last: int = 5                           # the avg checkpoint averages the last k epochs' weights
    val_bleu_sentences: int = 0                 # greedy BLEU on the first n validation sentences; 0 = all
    save_every: int = 0                         # also write `last` every n steps; 0 = only at the end of epochs
    log_every: int = 10                         # a train record in metrics.jsonl every n steps
    bpe_dropout: float = 0.0                    # BPE-dropout of the training pairs, drawn anew each epoch; 0 = off
    rdrop: float = 0.0                          # R-Drop's weight of the symmetric KL of two dropout passes; 0 = off
    extra_source: str = None                    # a second source language of the training split (e.g. fr), tagged
    held_back: int = 0                          # training pairs held back (the rarest words) and scored beside val
    precision: str = "fp32"                     # fp32, or fp16: mixed precision with loss scaling
    decoding: dict = field(default_factory=lambda: dict(DECODING))   # evaluate's and translate's defaults

    def to_dict(self):
        return asdict(self)

    def sizes(self, kind):
        """The model configuration fields (all but vocab_size) for a model kind: transformer, lstm or lstm-attn."""
        return dict(self.model if kind == "transformer" else self.lstm)


PRESETS = {p.name: p for p in [
    Preset("demo", "a tiny model on the generated en->toy corpus (toy: a language invented for the demo): trains "
                   "in a few minutes on a CPU, offline",
           model=dict(d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, dropout=0.1,
                      max_len=128),
           lstm=dict(d_embed=64, d_hidden=80, n_layers=2, dropout=0.1, max_len=128),
           corpus="demo", src="en", tgt="toy", vocab_size=500, batch_tokens=2048, epochs=6, lr=3e-3, warmup=100,
           avg_last=2, log_every=5),
    Preset("tiny", "a CPU smoke run on Multi30k: one short epoch of a very small model",
           model=dict(d_model=64, n_heads=2, d_ff=128, n_encoder_layers=1, n_decoder_layers=1, dropout=0.1,
                      max_len=256),
           lstm=dict(d_embed=64, d_hidden=64, n_layers=1, dropout=0.1, max_len=256),
           vocab_size=2000, batch_tokens=2048, epochs=1, lr=2e-3, warmup=100, avg_last=1, val_bleu_sentences=200),
    # small: the recipe chosen on validation in docs/experiments.md section 5 (issue 13); until then it was
    # --vocab-size 8000 --epochs 15 --lr 1e-3, decoded with best, beam 5, length penalty 0.6
    Preset("small", "the usual Multi30k size (d_model 256, 4 heads, d_ff 1024, 3+3 layers, pre-LN)",
           model=dict(d_model=256, n_heads=4, d_ff=1024, n_encoder_layers=3, n_decoder_layers=3, dropout=0.1,
                      max_len=256, norm="pre"),
           lstm=dict(d_embed=256, d_hidden=384, n_layers=2, dropout=0.1, max_len=256),
           vocab_size=4000, batch_tokens=4096, epochs=16, lr=2e-3, warmup=300, avg_last=5, save_every=50,
           decoding=dict(checkpoint="avg", beam=8, length_penalty=1.4)),
    Preset("base", "the 2017 paper's base size (512, 8 heads, 2048, 6+6 layers), meant for a GPU",
           model=dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, dropout=0.1,
                      max_len=256, norm="pre"),
           lstm=dict(d_embed=512, d_hidden=1024, n_layers=3, dropout=0.1, max_len=256),
           vocab_size=8000, batch_tokens=8192, epochs=30, lr=7e-4, warmup=1000, avg_last=5, save_every=200),
]}
