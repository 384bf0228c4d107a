"""Pitch-shifted, envelope-preserving variants of the gender training clips (WORLD vocoder).

Why: in natural emotional speech a shouting man reaches 250-330 Hz (URDU's angry male TV speakers),
above many women's pitch.  A model that learns "high pitch = female" fails there.  Re-synthesising
each training clip with its spectral envelope kept (formants: vocal-tract length, the stable cue) and
its F0 moved across the other gender's range teaches the model to rely on the envelope:
  male   clips: F0 x 1.25-2.5 (up to shouted/high voices) and x 0.9-1.5
  female clips: F0 x 0.65-0.9 (low female voices) and x 0.85-1.25
Both genders are vocoded, so vocoder artefacts carry no label.  A small frequency warp of the
envelope (+-6 %, like vocal-tract length perturbation) adds speaker variety without crossing genders.

Variants are cached under training/cache/variants/ (gitignored) and only ever made for training clips.
"""
from __future__ import annotations

import hashlib
import os
import warnings
from multiprocessing import Pool

import numpy as np

from training.data import clips as D

SR = D.SR
FRAME_MS = 5.0
RATIOS = {"male": ((1.25, 2.5), (0.9, 1.5)), "female": ((0.65, 0.9), (0.85, 1.25))}
WARP = 0.06
VERSION = "v2"
# tasks trained with these variants (recipes/longform.py); arousal with +-18 % F0 / +-8 % envelope variants was tried and
# not kept (UAR 0.548 vs 0.577; in-corpus 0.628 vs 0.636; URDU 0.430 vs 0.488)
VARIANT_TASKS = {"gender"}


def _log_uniform(rng, lo, hi):
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _warp_envelope(sp: np.ndarray, alpha: float) -> np.ndarray:
    """Stretch the envelope along frequency by alpha (>1 moves formants up)."""
    n = sp.shape[1]
    src = np.clip(np.arange(n) / alpha, 0, n - 1)
    lo = np.floor(src).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    f = src - lo
    return np.ascontiguousarray(sp[:, lo] * (1 - f) + sp[:, hi] * f)


def make_variants(job) -> list[np.ndarray]:
    """job = (int16 audio, ratio ranges, envelope warp, seed) -> list of int16 variants."""
    import pyworld as pw
    x16, ratios, warp, seed = job
    rng = np.random.default_rng(seed)
    x = x16.astype(np.float64) / 32768.0
    if x.size < SR // 10:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f0, t = pw.dio(x, SR, f0_floor=60.0, f0_ceil=600.0, frame_period=FRAME_MS)
        f0 = pw.stonemask(x, f0, t, SR)
        sp = pw.cheaptrick(x, f0, t, SR)
        ap = pw.d4c(x, f0, t, SR)
    out = []
    for lo, hi in ratios:
        r = _log_uniform(rng, lo, hi)
        sp_v = _warp_envelope(sp, _log_uniform(rng, 1 - warp, 1 + warp))
        y = pw.synthesize(np.ascontiguousarray(f0 * r), sp_v, ap, SR, FRAME_MS)[: x.size]
        peak = np.abs(y).max()
        if not np.isfinite(peak) or peak < 1e-6:
            continue
        y *= min(1.0, 0.99 / peak)
        out.append(np.clip(np.round(y * 32767.0), -32768, 32767).astype(np.int16))
    return out


def recipe(task: str) -> str:
    """The settings that define a task's variants (part of every cache key built on them)."""
    if task != "gender":
        raise ValueError(f"no voice variants for {task}")
    return f"{RATIOS}|{WARP}|{VERSION}"


def build(clips, store: D.AudioStore, task: str = "gender", workers: int = 2, seed: int = 7) -> dict[int, list[np.ndarray]]:
    """{clip idx: [variant int16 arrays]} for every training clip of the task (cached)."""
    train = [c for c in clips if D.task_label(task, c) is not None and D.task_split(task, c) == "train"]
    key = hashlib.sha1(f"{D.rows_sha256(train)}|{seed}|{recipe(task)}".encode()).hexdigest()[:12]
    fn = os.path.join(D.CACHE, "variants", f"{task}_{key}.npz")
    if not os.path.exists(fn):
        os.makedirs(os.path.dirname(fn), exist_ok=True)
        jobs = [(np.clip(np.round(store.get(c) * 32768.0), -32768, 32767).astype(np.int16), RATIOS[c.gender], WARP,
                 seed * 100003 + c.idx) for c in train]
        with Pool(workers) as p:
            res = p.map(make_variants, jobs, chunksize=8)
        owners, arrs = [], []
        for c, vs in zip(train, res):
            for v in vs:
                owners.append(c.idx)
                arrs.append(v)
        offsets = np.concatenate([[0], np.cumsum([a.size for a in arrs])]).astype(np.int64)
        tmp = fn[:-4] + f".tmp{os.getpid()}.npz"
        np.savez(tmp, data=np.concatenate(arrs), offsets=offsets, owners=np.array(owners, dtype=np.int64))
        os.replace(tmp, fn)
    z = np.load(fn)
    data, offsets, owners = z["data"], z["offsets"], z["owners"]
    out: dict[int, list[np.ndarray]] = {}
    for i, idx in enumerate(owners):
        out.setdefault(int(idx), []).append(data[offsets[i]:offsets[i + 1]])
    return out


if __name__ == "__main__":
    import sys
    import time
    t = time.time()
    cl = D.load_clips()
    v = build(cl, D.AudioStore(cl), task=sys.argv[1] if len(sys.argv) > 1 else "gender")
    print(f"{sum(len(a) for a in v.values())} variants of {len(v)} clips in {time.time() - t:.0f}s")
