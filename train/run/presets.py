"""Named training set-ups: a model size for each model kind plus the training settings that suit it.

Each setting's value for each preset is declared with the setting (settings.SETTINGS: a default, and a preset's own
where it differs); a preset here adds its name, its description and its model sizes. Every setting can be overridden
by the fit command's flag of the same name; the run folder's config.json records what a run actually used.
"""
from transformer.registry import kind_of

from .settings import DECODING, DECLARED, setting_values  # noqa: F401 (DECODING: evaluate's defaults, read here)


class Preset:
    """A named set-up: name, description, the model sizes of each preset field of the model kinds (model: the
    Transformer's ModelConfig fields other than vocab_size; lstm: the LSTMConfig fields, about as many parameters at
    this vocabulary size) and each setting's value (preset.lr, ...: the declared ones, `values` overriding them)."""

    def __init__(self, name, description, model=None, lstm=None, **values):
        unknown = sorted(set(values) - set(setting_values(name)))
        if unknown:
            raise TypeError(f"Preset {name}: {', '.join(unknown)} is no setting a preset chooses")
        self.name, self.description, self.model, self.lstm = name, description, dict(model or {}), dict(lstm or {})
        self.values = {**setting_values(name), **values}

    def __getattr__(self, key):
        values = self.__dict__.get("values", {})
        if key in values:
            return values[key]
        raise AttributeError(f"Preset has no attribute {key!r}")

    def replace(self, **changes):
        """A copy with some settings (or its model sizes: model=, lstm=) changed, as dataclasses.replace does."""
        sizes = {k: changes.pop(k, getattr(self, k)) for k in ("model", "lstm")}
        return Preset(self.name, self.description, **sizes, **{**self.values, **changes})

    def to_dict(self):
        """The settings this preset chooses."""
        return dict(self.values)

    def sizes(self, kind):
        """The model configuration fields (all but vocab_size) of a model kind: transformer, lstm or lstm-attn."""
        return dict(getattr(self, kind_of(kind).preset_field))


PRESETS = {p.name: p for p in [
    Preset("demo", "a tiny model on the generated en->toy corpus (toy: a language invented for the demo): trains "
                   "in a few minutes on a CPU, offline",
           model=dict(d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, dropout=0.1,
                      max_len=128),
           lstm=dict(d_embed=64, d_hidden=80, n_layers=2, dropout=0.1, max_len=128)),
    Preset("tiny", "a CPU smoke run on Multi30k: one short epoch of a very small model",
           model=dict(d_model=64, n_heads=2, d_ff=128, n_encoder_layers=1, n_decoder_layers=1, dropout=0.1,
                      max_len=256),
           lstm=dict(d_embed=64, d_hidden=64, n_layers=1, dropout=0.1, max_len=256)),
    # small: the recipe chosen on validation in docs/experiments.md section 5 (issue 13); until then it was
    # --vocab-size 8000 --epochs 15 --lr 1e-3, decoded with best, beam 5, length penalty 0.6
    Preset("small", "the usual Multi30k size (d_model 256, 4 heads, d_ff 1024, 3+3 layers, pre-LN)",
           model=dict(d_model=256, n_heads=4, d_ff=1024, n_encoder_layers=3, n_decoder_layers=3, dropout=0.1,
                      max_len=256, norm="pre"),
           lstm=dict(d_embed=256, d_hidden=384, n_layers=2, dropout=0.1, max_len=256)),
    Preset("base", "the 2017 paper's base size (512, 8 heads, 2048, 6+6 layers), meant for a GPU",
           model=dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, dropout=0.1,
                      max_len=256, norm="pre"),
           lstm=dict(d_embed=512, d_hidden=1024, n_layers=3, dropout=0.1, max_len=256)),
]}
