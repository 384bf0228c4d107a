"""The speaker models' configs and training defaults: read by speaker_train (training), speaker_export (the
manifest and the reproduce command) and segment_consistency, so the exporter need not import the trainer."""

# model configs (model.py's Net): gain normalisation by the local mean (gender) or the local max (arousal,
# emotions: how loud a word is against its neighbours carries arousal)
CONFIGS = {
    "gender": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, lifter=12),
    "arousal": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, norm="max", dropout=0.2),
    "emotions": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, norm="max", dropout=0.2),
}
DEFAULTS = dict(examples=12800, epochs=10, lr=3e-3, ema=0.998)
