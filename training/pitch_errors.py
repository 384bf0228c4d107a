"""Is a gender fold's error the voice's pitch?  Median F0 of the clips a leave-one-corpus-out model gets right and
wrong, per held-out corpus and gender, and its accuracy per emotion.

    python -m training.pitch_errors --runs training/runs/exp/base     # the fold files of a `loco.py --task gender` run

F0 is WORLD's DIO + StoneMask (pyworld, a training requirement), the median over a clip's voiced frames, of every
clip (clip_f0, computed once and cached; the --pitch-counter sampler reads the same values).
"""
from __future__ import annotations

import argparse
import collections
import json
import os

import numpy as np

from . import data as D
from . import speaker_data as SD

# folds below 0.95 where F0 can be read: hyke (8 kHz phone calls, 300 Hz high-pass) has lost most men's fundamental,
# and DIO reads its second harmonic instead
CORPORA = ("ased", "nemo", "urdu")


def median_f0(x: np.ndarray, sr: int = 16000) -> float:
    import pyworld as pw
    x = x.astype(np.float64)
    f0, t = pw.dio(x, sr, f0_floor=60, f0_ceil=500, frame_period=10)
    f0 = pw.stonemask(x, f0, t, sr)
    voiced = f0[f0 > 0]
    return float(np.median(voiced)) if voiced.size > 10 else float("nan")


def fold_report(run_dir: str, corpus: str, clips, f0: dict) -> dict:
    z = np.load(os.path.join(run_dir, "gender", f"{corpus}.npz"))
    by_idx = {c.idx: c for c in clips}
    groups, per_emotion = collections.defaultdict(list), collections.defaultdict(list)
    for i, y, p in zip(z["idx"], z["y"], z["clean"]):
        if np.isnan(p).any():
            continue
        c, right = by_idx[int(i)], bool(p.argmax() == y)
        groups[(SD.GENDER_CLASSES[y], right)].append(c)
        per_emotion[(SD.GENDER_CLASSES[y], c.emotion or "-")].append(right)
    out = {"f0_hz": {}, "accuracy_by_emotion": {}}
    for (gender, right), cs in sorted(groups.items()):
        q = np.nanpercentile([f0[c.idx] for c in cs], [25, 50, 75])
        out["f0_hz"][f"{gender}, {'right' if right else 'wrong'}"] = {"clips": len(cs), "p25": round(float(q[0])),
                                                                     "median": round(float(q[1])), "p75": round(float(q[2]))}
    for (gender, emotion), ok in sorted(per_emotion.items()):
        out["accuracy_by_emotion"][f"{gender}, {emotion}"] = {"clips": len(ok), "accuracy": round(float(np.mean(ok)), 3)}
    return out


# ------------------------------------------------------------------ per-clip F0 (also read by --pitch-counter)
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


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True, help="folder of a loco.py --task gender run")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(D.HERE), "models", "gender", "pitch_errors.json"))
    a = ap.parse_args(argv)
    clips, f0 = D.load_clips(), clip_f0()
    rep = {"runs": a.runs, "folds": {c: fold_report(a.runs, c, clips, f0) for c in CORPORA}}
    with open(a.out, "w") as fh:
        json.dump(rep, fh, indent=1)
        fh.write("\n")
    for corpus, r in rep["folds"].items():
        print(corpus, json.dumps(r["f0_hz"]))


if __name__ == "__main__":
    main()
