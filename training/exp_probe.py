"""Experiment: how far do other views of a clip carry arousal and emotion across corpora? (linear probes)

    python -m training.exp_probe            # prints leave-one-corpus-out UAR per view and task

Neither view reaches the service; they bound what a model could learn from the same labels:
- `dvec`: the Resemblyzer d-vector of the clip (training/cache/teachers.npz, training/teachers.py), 256-d;
- `prosody`: 14 hand-made clip statistics (log-F0 level, spread and range from WORLD's DIO, voiced share,
  loudness dynamics, alpha ratio 1-4 kHz / 0-1 kHz, pitch movement, duration), cached under training/cache/;
- each also with the speaker's own mean taken out over *all* of the speaker's clips (`spk`), and for
  prosody z-scored per speaker (`spk-z`): an oracle, the most a per-speaker baseline (pitch and loudness
  relative to how the same speaker usually sounds) could give, since no call shows all of a speaker's emotions.
A class-balanced logistic regression (L-BFGS) is trained on every corpus but one and scored on the one left out;
for comparison, `within` trains and scores inside each corpus on disjoint speakers (5 speaker folds), the same
view and labels without the shift between corpora.
"""
from __future__ import annotations

import hashlib
import os

import numpy as np
import torch

from . import data as D
from . import speaker_data as S
from .evaluation import recall_table

PROSODY_NAMES = ("logf0 mean", "logf0 std", "logf0 p90-p10", "logf0 p95", "voiced share", "voiced/active",
                 "level std", "level p90-p10", "voiced level re max", "alpha ratio", "alpha ratio std",
                 "pitch movement", "duration", "active share")


def clip_prosody(x: np.ndarray) -> list[float] | None:
    """Clip-level prosody statistics of 16 kHz audio (10 ms frames), or None when it has too little voicing."""
    import pyworld
    x = x.astype(np.float64)
    if x.size < 3200:
        return None
    f0, t = pyworld.dio(x, D.SR, frame_period=10.0, f0_floor=60, f0_ceil=600)
    f0 = pyworld.stonemask(x, f0, t, D.SR)
    n = min(len(f0), x.size // 160)
    frames = x[:n * 160].reshape(n, 160)
    level = 10 * np.log10((frames ** 2).mean(1) + 1e-10)
    spec = np.abs(np.fft.rfft(frames * np.hanning(160), n=512, axis=1)) ** 2
    low, high = spec[:, 1:33].sum(1) + 1e-10, spec[:, 33:129].sum(1) + 1e-10     # 0-1 kHz, 1-4 kHz
    f0 = f0[:n]
    voiced, active = f0 > 0, level > level.max() - 35
    if voiced.sum() < 5:
        return None
    lf, la = np.log(f0[voiced]), level[active]
    alpha = 10 * np.log10(high[voiced] / low[voiced])
    move = np.abs(np.diff(lf)).mean() if lf.size > 2 else 0.0
    return [lf.mean(), lf.std(), np.percentile(lf, 90) - np.percentile(lf, 10), np.percentile(lf, 95),
            voiced.mean(), voiced.sum() / max(active.sum(), 1), la.std(), np.percentile(la, 90) - np.percentile(la, 10),
            level[voiced].mean() - level.max(), alpha.mean(), alpha.std(), move, x.size / D.SR, active.mean()]


def prosody_features(clips):
    """{clip idx: statistics} for every clip of the arousal and emotions tasks (cached, keyed by those clips' rows)."""
    use = [c for c in clips if S.label("arousal", c) is not None or S.label("emotions", c) is not None]
    cache = os.path.join(D.CACHE, f"prosody_{D.rows_sha256(use)[:12]}.npz")
    if os.path.exists(cache):
        z = np.load(cache)
        return dict(zip(z["idx"].tolist(), z["F"]))
    store = D.AudioStore(clips)
    out = {}
    for c in use:
        f = clip_prosody(store.get(c))
        if f is not None:
            out[c.idx] = np.array(f)
    np.savez(cache, idx=np.array(list(out)), F=np.stack(list(out.values())))
    return out


def dvec_features(clips):
    z = np.load(os.path.join(D.CACHE, "teachers.npz"))
    emb = z["emb"].astype(np.float32)
    return {int(i): e for i, e in zip(z["idx"], emb) if np.isfinite(e).all()}


def probe(x_train, y_train, x_test, classes):
    """Class-balanced logistic regression; predicted class names of x_test."""
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-6
    a = torch.tensor((x_train - mu) / sd, dtype=torch.float32)
    b = torch.tensor([classes.index(v) for v in y_train])
    counts = np.bincount(b.numpy(), minlength=len(classes))
    weight = torch.tensor(len(b) / (len(classes) * np.maximum(counts, 1)), dtype=torch.float32)
    torch.manual_seed(0)
    lin = torch.nn.Linear(a.shape[1], len(classes))
    opt = torch.optim.LBFGS(lin.parameters(), max_iter=300)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(lin(a), b, weight=weight) + 1e-3 * (lin.weight ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    with torch.no_grad():
        return np.array(classes)[lin(torch.tensor((x_test - mu) / sd, dtype=torch.float32)).argmax(1).numpy()]


def uar(y_true, y_pred, classes) -> float:
    """Mean recall over the classes present in y_true (evaluation.recall_table on class indices)."""
    rec = recall_table(np.array([classes.index(v) for v in y_true]), np.array([classes.index(v) for v in y_pred]), len(classes))
    return float(np.nanmean(list(rec.values())))


def speaker_relative(x, speakers, scale=False):
    out = x.copy()
    for s in set(speakers):
        m = speakers == s
        out[m] = x[m] - x[m].mean(0)
        if scale:
            out[m] /= x[m].std(0) + 1e-6
    return out


def within_corpus(x, y, source, spk, classes, folds=5) -> float:
    """Mean over corpora of the speaker-disjoint (5-fold) UAR inside each corpus."""
    out = []
    for h in sorted(set(source)):
        m = source == h
        fold = np.array([int(hashlib.md5(s.encode()).hexdigest(), 16) % folds for s in spk[m]])
        pred = np.empty(m.sum(), dtype=object)
        for f in range(folds):
            te = fold == f
            if te.any() and (~te).any():
                pred[te] = probe(x[m][~te], y[m][~te], x[m][te], classes)
        out.append(uar(y[m], pred, classes))
    return float(np.mean(out))


def main():
    torch.set_num_threads(1)
    clips = D.load_clips()
    by_idx = {c.idx: c for c in clips}
    views = {"dvec": dvec_features(clips), "prosody": prosody_features(clips)}
    for task in ("arousal", "emotions"):
        classes = S.CLASSES[task]
        for view, feats in views.items():
            cs = [by_idx[i] for i in feats if S.label(task, by_idx[i]) is not None]
            x = np.stack([feats[c.idx] for c in cs])
            y = np.array([S.label(task, c) for c in cs])
            source = np.array([c.source for c in cs])
            spk = np.array([c.speaker for c in cs])
            variants = {"raw": x, "spk": speaker_relative(x, spk)}
            if view == "prosody":
                variants["spk-z"] = speaker_relative(x, spk, scale=True)
            for name, xv in variants.items():
                res = {h: uar(y[source == h], probe(xv[source != h], y[source != h], xv[source == h], classes), classes)
                       for h in sorted(set(source))}
                print(f"{task:8s} {view:7s} {name:5s} clips {len(y):5d} | "
                      + " | ".join(f"{h} {u:.3f}" for h, u in res.items()) + f" | mean {np.mean(list(res.values())):.3f}"
                      + f" | within {within_corpus(xv, y, source, spk, classes):.3f}", flush=True)


if __name__ == "__main__":
    main()
