"""WORLD voice variants of the gender training speakers of every corpus, as a feature bank (gender 2.x).

The 1.x recipe's second member learnt the spectral envelope instead of pitch from such variants (F0 moved
across the other gender's range, envelope kept: voice_variants.py); the 2.x bank (bank.py) had none.  Here up
to PER_SPEAKER clips of each training speaker (spread over the speaker's emotions) get two variants each
(`var0`: F0 moved towards the other gender, `var1`: within the own range), and `var0` also goes through a
telephone codec (`varp`).  Items are keyed by the source clip, so a leave-one-corpus-out fold that leaves a
corpus out never draws its variants.  Cached under training/cache/ like the bank.
"""
from __future__ import annotations

import hashlib
import os
import time
from multiprocessing import Pool

import numpy as np

from training.data import bank as B
from training.data import channels as CH
from training.data import clips as D
from training.data import speakers as SD
from training.data import voice_variants as VV

PER_SPEAKER = 16
VERSIONS = ("var0", "var1", "varp")


def chosen_clips(clips, per_speaker=PER_SPEAKER, seed=5):
    """Up to `per_speaker` training clips per gender-labelled speaker, taken round-robin over its emotions."""
    rng = np.random.default_rng(seed)
    by_spk: dict = {}
    for c, _ in SD.clips_of("gender", clips, split_name="train"):
        by_spk.setdefault(c.speaker, {}).setdefault(c.emotion, []).append(c)
    out = []
    for spk in sorted(by_spk):
        cells = [list(rng.permutation(v)) for _, v in sorted(by_spk[spk].items(), key=lambda kv: str(kv[0]))]
        take = []
        while len(take) < per_speaker and any(cells):
            for cell in cells:
                if cell and len(take) < per_speaker:
                    take.append(cell.pop())
        out.extend(take)
    return out


_CTX: dict = {}


def _variants(job):
    k, seed = job
    c = _CTX["use"][k]
    x16 = np.clip(np.round(_CTX["store"].get(c) * 32768.0), -32768, 32767).astype(np.int16)
    vs = VV.make_variants((x16, VV.RATIOS[c.gender], VV.WARP, seed))
    if len(vs) != 2:
        return k, None
    x0, x1 = (v.astype(np.float32) / 32768.0 for v in vs)
    rng = np.random.default_rng(seed)
    codec = list(CH.CODECS)[seed % len(CH.CODECS)]  # one clip per call: spread the codecs by the seed
    (xp,) = CH.phone_batch([x0], codec, rng, None)
    return k, [B.recording_features(x) for x in (x0, x1, xp)]


def build(clips, workers: int = 2, seed: int = 13) -> B.Bank:
    use = chosen_clips(clips)
    key = hashlib.sha1(f"{seed}|{PER_SPEAKER}|{VV.recipe('gender')}|{D.rows_sha256(use)}".encode()).hexdigest()[:12]
    fn = os.path.join(D.CACHE, f"varbank_{key}.npz")
    if os.path.exists(fn):
        z = np.load(fn)
        return B.Bank(*(z[k] for k in ("feats", "off", "voiced", "voff", "clip_idx", "version", "codec", "active")))
    t0 = time.time()
    _CTX.update(store=D.AudioStore(clips), use=use)
    feats, voiced, cidx, ver, active = [], [], [], [], []
    with Pool(workers) as p:
        for n, (k, res) in enumerate(p.imap(_variants, [(k, seed * 100003 + use[k].idx) for k in range(len(use))], chunksize=4)):
            if res is not None:
                for v, (f, m, a) in zip(VERSIONS, res):
                    feats.append(f); voiced.append(m); cidx.append(use[k].idx); ver.append(v); active.append(a)
            if n % 200 == 0:
                print(f"[varbank] {n}/{len(use)} clips ({time.time() - t0:.0f}s)", flush=True)
    _CTX.clear()
    off = np.concatenate([[0], np.cumsum([f.shape[0] for f in feats])]).astype(np.int64)
    voff = np.concatenate([[0], np.cumsum([m.size for m in voiced])]).astype(np.int64)
    bank = B.Bank(np.concatenate(feats), off, np.concatenate(voiced), voff, np.array(cidx), np.array(ver),
                  np.array([""] * len(ver)), np.array(active, dtype=np.float32))
    tmp = fn[:-4] + f".tmp{os.getpid()}.npz"
    np.savez(tmp, feats=bank.feats, off=off, voiced=bank.voiced, voff=voff, clip_idx=bank.clip_idx,
             version=bank.version, codec=bank.codec, active=bank.active)
    os.replace(tmp, fn)
    print(f"[varbank] {len(use)} clips in {time.time() - t0:.0f}s", flush=True)
    return bank


if __name__ == "__main__":
    build(D.load_clips())
