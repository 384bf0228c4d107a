"""Median F0 of a clip (WORLD's DIO + StoneMask, pyworld): per gender-labelled clip, computed once and cached.
Read by the speaker recipe's --pitch-counter sampler and by validate/pitch_errors.py."""
from __future__ import annotations

import os

import numpy as np

from training.data import clips as D
from training.data import speakers as SD


def median_f0(x: np.ndarray, sr: int = 16000) -> float:
    import pyworld as pw
    x = x.astype(np.float64)
    f0, t = pw.dio(x, sr, f0_floor=60, f0_ceil=500, frame_period=10)
    f0 = pw.stonemask(x, f0, t, sr)
    voiced = f0[f0 > 0]
    return float(np.median(voiced)) if voiced.size > 10 else float("nan")


F0_CACHE = os.path.join(D.CACHE, "clip_f0.npz")


def _f0_chunk(idxs):  # one chunk per worker: the clip list and audio store are opened once each
    clips = D.load_clips()
    by_idx, store = {c.idx: c for c in clips}, D.AudioStore(clips)
    return [(i, median_f0(store.get(by_idx[i]))) for i in idxs]


def clip_f0(workers: int = 2) -> dict:
    """clip idx -> median F0 (Hz, NaN when unvoiced) of every gender-labelled clip, cached in training/cache."""
    clips = D.load_clips()
    want = sorted(c.idx for c, _ in SD.clips_of("gender", clips))
    if os.path.exists(F0_CACHE):
        z = np.load(F0_CACHE)
        if set(want) <= set(z["idx"].tolist()):
            return dict(zip(z["idx"].tolist(), z["f0"].tolist()))
    from multiprocessing import Pool
    chunks = [want[k::workers] for k in range(workers)]
    with Pool(workers) as pool:
        pairs = [p for part in pool.map(_f0_chunk, chunks) for p in part]
    idx, f0 = zip(*sorted(pairs))
    np.savez(F0_CACHE, idx=np.array(idx), f0=np.array(f0, dtype=np.float32))
    return dict(zip(idx, f0))
