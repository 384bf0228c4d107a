"""Stress slices of a validation: clip decisions scored per gender x arousal cell, and the pitch-moved slice (WORLD
re-syntheses with F0 moved towards the other gender and the envelope kept, which must not flip a gender decision)."""
from __future__ import annotations

import numpy as np

from training.data import bank as B
from training.data import clips as D

PITCH_CLIPS = 30  # per gender and held-out corpus


def scores(task, y, p):
    """recipes.speaker.scores of the clips that have a prediction (NaN rows: no voiced step)."""
    from training.recipes.speaker import scores as clip_scores
    ok = ~np.isnan(p).any(axis=1)
    return clip_scores(task, list(y[ok]), list(p[ok]))


def cells(task, clips_by_idx, idx, y, p):
    """Gender x arousal (and emotion) cells of the held-out predictions."""
    out = {}
    if task == "gender":
        groups = {"low-arousal women": lambda c, g: g == 0 and c.arousal == "low",
                  "high-arousal men": lambda c, g: g == 1 and c.arousal == "high",
                  "high-arousal women": lambda c, g: g == 0 and c.arousal == "high",
                  "low-arousal men": lambda c, g: g == 1 and c.arousal == "low",
                  "sad women": lambda c, g: g == 0 and c.emotion in ("sad", "sadness"),
                  "angry men": lambda c, g: g == 1 and c.emotion in ("angry", "anger")}
    else:
        genders = {"women": "female", "men": "male"}
        groups = {name: (lambda c, g, gg=gg: c.gender == gg) for name, gg in genders.items()}
    for name, f in groups.items():
        m = np.array([f(clips_by_idx[i], g) for i, g in zip(idx, y)])
        if m.any():
            out[name] = scores(task, y[m], p[m])
    return out


def pitch_variants(clips, held, seed=3):
    """WORLD re-syntheses of PITCH_CLIPS clips per gender: F0 moved towards the other gender (men x1.5-1.8,
    women x0.6-0.7), spectral envelope kept."""
    from training.data.voice_variants import make_variants
    rng = np.random.default_rng(seed)
    store = D.AudioStore(clips)
    out = []
    for g, ratio in ((0, (0.6, 0.7)), (1, (1.5, 1.8))):  # female down, male up
        pool = [c for c, y in held if y == g]
        for c in [pool[k] for k in rng.permutation(len(pool))[:PITCH_CLIPS]]:
            x16 = np.clip(np.round(store.get(c) * 32767), -32768, 32767).astype(np.int16)
            vs = make_variants((x16, [ratio], 0.0, int(rng.integers(1 << 30))))
            if vs:
                out.append((c, g, vs[0].astype(np.float32) / 32768.0))
    return out


def pitch_slice(model, clips, held):
    import torch
    from training.features import logmel_fast
    idx, ys, probs = [], [], []
    for c, g, x in pitch_variants(clips, held):
        v = B.voiced_steps(x)
        with torch.no_grad():
            p = model(torch.from_numpy(logmel_fast(x))[None])[0].numpy()
        probs.append(B.voiced_mean(p, v))
        idx.append(c.idx)
        ys.append(g)
    return {"pitch_idx": np.array(idx), "pitch_y": np.array(ys), "pitch": np.array(probs)}
