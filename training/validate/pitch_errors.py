"""Is a gender fold's error the voice's pitch?  Median F0 of the clips a leave-one-corpus-out model gets right and
wrong, per held-out corpus and gender, and its accuracy per emotion.

    python -m training.validate.pitch_errors --runs training/runs/exp/base     # the fold files of a `loco.py --task gender` run

F0 is WORLD's DIO + StoneMask (pyworld, a training requirement), the median over a clip's voiced frames, of every
clip (data/pitch.py's clip_f0, computed once and cached; the --pitch-counter sampler reads the same values).
"""
from __future__ import annotations

import argparse
import collections
import json
import os

import numpy as np

from training.data import clips as D
from training.data import speakers as SD
from training.data.pitch import clip_f0

# folds below 0.95 where F0 can be read: hyke (8 kHz phone calls, 300 Hz high-pass) has lost most men's fundamental,
# and DIO reads its second harmonic instead
CORPORA = ("ased", "nemo", "urdu")


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
