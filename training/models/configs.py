"""The architectures' configs (models/net.py's Net keyword arguments) of the two recipe families.  A recipe file
holds overrides of these (its `cfg`); nothing changes them at run time."""

# recipes/longform.py (speech 1.x, gender 1.x members 1-2, arousal 1.0.x).
# norm_k: frames of the gain-normalisation window; dil: step-rate dilations
LONGFORM = {
    "speech": dict(c1=32, c2=96, dil=(1, 2, 4), norm_k=31),
    "gender": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63),
    "arousal": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, norm="max", dropout=0.2),
    # emotions' causal head only (recipes/causal.py; emotions' network is a speaker-recipe one): arousal's widths
    "emotions": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, norm="max", dropout=0.2),
}

# recipes/speaker.py (gender 1.3.0's member 3, emotions 1.x, the 2.x candidates): gain normalisation by the local
# mean (gender) or the local max (arousal, emotions: how loud a word is against its neighbours carries arousal)
SPEAKER = {
    "gender": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, lifter=12),
    "arousal": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, norm="max", dropout=0.2),
    "emotions": dict(c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, norm="max", dropout=0.2),
}
