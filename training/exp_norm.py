"""Experiment: leave-one-corpus-out with the log-mel spectrum's long-term shape taken out before the model.

    python -m training.exp_norm --norm utt --task arousal --runs training/runs/exp/norm_utt

`--norm utt`: each clip's own mean spectral shape (per-band mean of its voiced frames, minus the mean over the
bands, so loudness is left to the model's gain normalisation) is subtracted from all of its frames; what a
running normaliser over one utterance would see.  `--norm spk`: the mean shape over all clips of the speaker
(same recording version), the ceiling of a per-speaker baseline.  The remaining arguments go to loco.py.
"""
from __future__ import annotations

import sys

import numpy as np

from . import bank as B
from . import data as D
from . import loco
from . import speaker_train as ST
from .features import FRAMES_PER_STEP


def _shape_of(bank, i):
    f = bank.features(i).astype(np.float32)
    v = np.repeat(bank.voiced_of(i), FRAMES_PER_STEP)
    if not v.any():
        return None, 0
    mu = f[v].mean(0)
    return mu - mu.mean(), int(v.sum())


def normalised(bank, clips, mode):
    """A copy of `bank` with each item's (or each speaker's) mean spectral shape subtracted."""
    n = len(bank.off) - 1
    shapes = [_shape_of(bank, i) for i in range(n)]
    off = np.zeros((n, bank.feats.shape[1]), dtype=np.float32)
    if mode == "utt":
        for i, (s, _) in enumerate(shapes):
            if s is not None:
                off[i] = s
    else:
        spk = {c.idx: c.speaker for c in clips}
        acc: dict = {}
        for i, (s, w) in enumerate(shapes):
            if s is not None:
                key = (spk[int(bank.clip_idx[i])], str(bank.version[i]))
                a = acc.setdefault(key, [np.zeros_like(s), 0])
                a[0] += s * w
                a[1] += w
        for i in range(n):
            a = acc.get((spk[int(bank.clip_idx[i])], str(bank.version[i])))
            if a is not None:
                off[i] = a[0] / a[1]
    lens = np.diff(bank.off)
    feats = (bank.feats.astype(np.float32) - np.repeat(off, lens, axis=0)).astype(np.float16)
    return B.Bank(feats, bank.off, bank.voiced, bank.voff, bank.clip_idx, bank.version, bank.codec, bank.active)


def main():
    k = sys.argv.index("--norm")
    mode = sys.argv[k + 1]
    del sys.argv[k:k + 2]
    clips = D.load_clips()
    nb = normalised(B.build(clips), clips, mode)
    ST.training_bank = lambda *_a, **_k: nb  # the folds fork from here and inherit it
    loco.main()


if __name__ == "__main__":
    main()
