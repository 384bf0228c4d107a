"""Does gender smoothing inside a speech segment help?  Scored on the leave-one-corpus-out folds.

    python -m training.validate.segment_consistency

For every held-out corpus, the fold model (training/runs/loco/gender/<corpus>.pt) labels each voiced step of
every clip three ways: its own probabilities; the running mean of the probabilities since the segment began
(causal: a live stream can do the same, so streams keep equal to file jobs); the mean over the whole segment
(needs the segment's end: file jobs only).  A segment is a run of voiced steps with gaps of at most GAP_STEPS.
Prints step accuracy and the share of segments whose label changes inside the segment.
"""
from __future__ import annotations

import json
import os

import numpy as np
import torch

from training.data import bank as B
from training.data import clips as D
from training.data import speakers as SD
from training.validate.loco import RUNS
from training.models.net import Net
from training.models.configs import SPEAKER as CONFIGS

GAP_STEPS = 8  # 512 ms of silence or less does not end a segment (pauses between words)


def segments(voiced: np.ndarray) -> list[tuple[int, int]]:
    out, start, last = [], None, -10 ** 9
    for s in np.flatnonzero(voiced):
        if start is None or s - last > GAP_STEPS:
            if start is not None:
                out.append((start, last + 1))
            start = s
        last = s
    if start is not None:
        out.append((start, last + 1))
    return out


def score(p: np.ndarray, voiced: np.ndarray, y: int) -> dict:
    res = {}
    for mode in ("step", "running", "segment"):
        lab = np.full(p.shape[0], -1)
        for a, b in segments(voiced):
            seg = p[a:b]
            if mode == "step":
                q = seg
            elif mode == "running":
                q = np.cumsum(seg, axis=0) / np.arange(1, b - a + 1)[:, None]
            else:
                q = np.repeat(seg.mean(0, keepdims=True), b - a, axis=0)
            lab[a:b] = q.argmax(1)
        v = voiced & (lab >= 0)
        res[mode] = ((lab[v] == y).sum(), v.sum(), sum(len(set(lab[a:b])) > 1 for a, b in segments(voiced)), len(segments(voiced)))
    return res


def main():
    clips = D.load_clips()
    bank = B.build(clips)
    total = {}
    for corpus in SD.CORPORA:
        fn = os.path.join(RUNS, "gender", f"{corpus}.pt")
        if not os.path.exists(fn):
            continue
        model = Net(2, **CONFIGS["gender"])
        model.load_state_dict(torch.load(fn))
        model.eval()
        acc = {}
        for version in ("clean", "phone"):
            for c, y in SD.clips_of("gender", clips, corpora=[corpus]):
                i = bank.find(c, version)
                f, v = bank.features(i), bank.voiced_of(i)
                with torch.no_grad():
                    p = model(torch.from_numpy(f.astype(np.float32))[None])[0].numpy()
                for mode, r in score(p, v, y).items():
                    a = acc.setdefault((version, mode), np.zeros(4))
                    a += r
        for (version, mode), a in acc.items():
            t = total.setdefault((version, mode), np.zeros(4))
            t += a
            print(f"{corpus:8s} {version:5s} {mode:8s} step acc {a[0] / a[1]:.4f}  segments that change label {a[2] / a[3]:.3f}")
    out = {f"{v}/{m}": {"step_accuracy": round(float(a[0] / a[1]), 4), "segments_changing": round(float(a[2] / a[3]), 4)}
           for (v, m), a in total.items()}
    print(json.dumps(out, indent=1))
    with open(os.path.join(RUNS, "gender_segment_consistency.json"), "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
