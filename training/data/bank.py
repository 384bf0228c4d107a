"""Feature bank of the speaker tasks: every labelled clip as log-mel features in three recordings of it.

Versions of a clip:
- `clean`: the dataset audio (16 kHz Opus) as it is;
- `phone`: through a telephone channel with a real narrow-band codec (channels.py; codecs spread evenly);
- `noisy`: mixed with music or other sounds from the training split at 5-25 dB SNR, with reverb (p=0.3)
  and band-limiting (p=0.2).
Training draws examples from the bank on the fly (recipes/speaker.py), so every epoch sees new combinations
without re-running the waveform chain; the same bank serves leave-one-corpus-out training and scoring.
Cached under training/cache/ (gitignored), keyed by the clips.csv rows and BANK_VERSION.
"""
from __future__ import annotations

import hashlib
import os
import time
from multiprocessing import Pool

import numpy as np

from training.data import augment as A
from training.data import channels as CH
from training.data import clips as D
from training.data import speakers as SD
from training.features import FRAMES_PER_STEP, logmel_fast, step_levels

VERSIONS = ("clean", "phone", "noisy")
BANK_VERSION = "b1"
VOICED_BELOW_ACTIVE_DB = 30.0  # a step counts as voiced within this many dB of the clip's active level


def voiced_mean(p: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A clip's probabilities from per-step ones [S, C]: the mean over its voiced steps (all steps if none is)."""
    return p[v if v.any() else np.ones_like(v)].mean(0)


def voiced_steps(x: np.ndarray) -> np.ndarray:
    """Steps within VOICED_BELOW_ACTIVE_DB of the clip's active level (80th percentile of step levels)."""
    lv = step_levels(x)
    if lv.size == 0:
        return np.zeros(0, dtype=bool)
    return (lv >= np.percentile(lv, 80) - VOICED_BELOW_ACTIVE_DB) & (lv > -75.0)


class Bank:
    """feats [frames, 64] float16, for item i rows off[i]:off[i+1]; voiced [steps] per item; item = (clip, version)."""

    def __init__(self, feats, off, voiced, voff, clip_idx, version, codec, active):
        self.feats, self.off, self.voiced, self.voff, self.active = feats, off, voiced, voff, active
        self.clip_idx, self.version, self.codec = clip_idx, version, codec
        self.item = {(int(c), str(v)): i for i, (c, v) in enumerate(zip(clip_idx, version))}

    def features(self, i: int) -> np.ndarray:
        return self.feats[self.off[i]:self.off[i + 1]]

    def voiced_of(self, i: int) -> np.ndarray:
        return self.voiced[self.voff[i]:self.voff[i + 1]]

    def find(self, clip, version: str) -> int | None:
        return self.item.get((clip.idx, version))


def merge(a: Bank, b: Bank) -> Bank:
    """One bank holding the items of both (e.g. the labelled bank and the bank of teacher-labelled speech)."""
    return Bank(np.concatenate([a.feats, b.feats]), np.concatenate([a.off, b.off[1:] + a.off[-1]]),
                np.concatenate([a.voiced, b.voiced]), np.concatenate([a.voff, b.voff[1:] + a.voff[-1]]),
                np.concatenate([a.clip_idx, b.clip_idx]), np.concatenate([a.version, b.version]),
                np.concatenate([a.codec, b.codec]), np.concatenate([a.active, b.active]))


def bank_clips(clips):
    return [c for c in clips if any(SD.label(t, c) is not None for t in SD.TASKS)]


def _noisy(x, bg, rng):
    y = x.copy()
    if A.active_db(bg) > -90:
        y = y + bg * A.db2amp(A.active_db(x) - A.active_db(bg) - rng.uniform(5, 25))
    if rng.random() < 0.3:
        y = A.reverb(y, rng)
    if rng.random() < 0.2:
        y = A.bandlimit(y, rng)
    return np.clip(y, -1, 1).astype(np.float32)


def recording_features(x):
    """Features, voiced-step mask and active level of one recording (a bank item)."""
    f = logmel_fast(x).astype(np.float16)
    v = voiced_steps(x)
    assert f.shape[0] == v.size * FRAMES_PER_STEP
    return f, v, A.active_db(x) if x.size else -100.0


# set in the parent before the pool forks (inherited, never pickled): the audio store, the clips, the backgrounds
_CTX: dict = {}


def _chunk(job):
    """All versions of a chunk of clips -> per version: features, voiced masks, active levels; and the codecs."""
    positions, seed = job
    store, use, backgrounds = _CTX["store"], _CTX["use"], _CTX["backgrounds"]
    rng = np.random.default_rng(seed)
    clean = [store.get(use[k]) for k in positions]
    phone, codecs = CH.phone_all(clean, seed)
    noisy = []
    for x in clean:
        bg = A.crop(store.get(backgrounds[rng.integers(len(backgrounds))]), x.size, rng)
        if bg.size < x.size:
            bg = np.tile(bg, int(np.ceil(x.size / max(1, bg.size))))[: x.size]
        noisy.append(_noisy(x, bg, rng))
    return {v: [recording_features(x) for x in w] for v, w in (("clean", clean), ("phone", phone), ("noisy", noisy))}, codecs


def build(clips, store: D.AudioStore | None = None, workers: int = 2, seed: int = 11, chunk: int = 300,
          select=None) -> Bank:
    """The bank of the labelled clips of `clips` (or of `select`, a subset): read from its cache, or built (decoding
    through `store`, loaded here when not given)."""
    use = bank_clips(clips) if select is None else list(select)
    key = hashlib.sha1(f"{BANK_VERSION}|{seed}|{chunk}|{D.rows_sha256(use)}".encode()).hexdigest()[:12]
    fn = os.path.join(D.CACHE, f"bank_{key}.npz")
    if os.path.exists(fn):
        z = np.load(fn)
        return Bank(*(z[k] for k in ("feats", "off", "voiced", "voff", "clip_idx", "version", "codec", "active")))
    t0 = time.time()
    store = store if store is not None else D.AudioStore(clips)
    pools = A.Pools(clips, "train")
    _CTX.update(store=store, use=use, backgrounds=pools.music + pools.other)
    jobs = [(list(range(i, min(i + chunk, len(use)))), seed * 1000 + i) for i in range(0, len(use), chunk)]
    feats, voiced, cidx, ver, codec, active = [], [], [], [], [], []
    with Pool(workers) as p:
        for (positions, _), (res, codecs) in zip(jobs, p.imap(_chunk, jobs)):
            for v in VERSIONS:
                for k, (f, m, a), cd in zip(positions, res[v], codecs):
                    feats.append(f); voiced.append(m); cidx.append(use[k].idx); ver.append(v); active.append(a)
                    codec.append(cd if v == "phone" else "")
            print(f"[bank] {positions[-1] + 1}/{len(use)} clips ({time.time() - t0:.0f}s)", flush=True)
    off = np.concatenate([[0], np.cumsum([f.shape[0] for f in feats])]).astype(np.int64)
    voff = np.concatenate([[0], np.cumsum([m.size for m in voiced])]).astype(np.int64)
    bank = Bank(np.concatenate(feats), off, np.concatenate(voiced), voff, np.array(cidx), np.array(ver), np.array(codec),
                np.array(active, dtype=np.float32))
    _CTX.clear()
    tmp = fn[:-4] + f".tmp{os.getpid()}.npz"
    np.savez(tmp, feats=bank.feats, off=off, voiced=bank.voiced, voff=voff, clip_idx=bank.clip_idx,
             version=bank.version, codec=bank.codec, active=bank.active)
    os.replace(tmp, fn)
    print(f"[bank] {len(use)} clips x {len(VERSIONS)} versions, {bank.feats.shape[0] / 62.5 / 3600:.1f} h in "
          f"{time.time() - t0:.0f}s", flush=True)
    return bank
