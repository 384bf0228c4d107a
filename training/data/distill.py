"""Teacher targets for the gender model, and how good the teachers are (training time only).

teachers.py stores two outside opinions per clip: inaSpeechSegmenter's P(female), and a Resemblyzer d-vector.
Here the d-vectors become a P(female) through a linear probe trained on our labelled speakers, and a weighted mean
of the two opinions (INA_WEIGHT) becomes the soft target of clips nobody labelled (VoxLingua, the KDE word lists), taken only
where both teachers agree with some confidence.  Leave-one-corpus-out stays honest: the probe that labels the
unlabelled clips for the fold that holds out corpus X never saw X's labels.

    python -m training.data.distill          # the teachers' own leave-one-corpus-out accuracy per corpus
"""
from __future__ import annotations

import functools
import json
import os

import numpy as np

from training.data import clips as D
from training.data import teacher_clips as DD
from training.data import speakers as SD

TEACHERS = os.path.join(D.CACHE, "teachers.npz")
MIN_CONFIDENCE = 0.75  # teacher P(class) a clip needs to become a training target
# weight of inaSpeechSegmenter in the target (the probe takes the rest): leave-one-corpus-out on our labelled
# speakers the probe alone is the stronger teacher (URDU 0.979 vs 0.844, ASED 0.863 vs 0.768); a little of the
# CNN's opinion still helps on real phone calls (hyke 0.937 vs 0.935)
INA_WEIGHT = 0.2
PROBE_L2 = 1e-3  # per clip; 1e-2 keeps the same accuracy but squeezes P(female) towards 0.5 (few confident targets)


@functools.lru_cache(maxsize=1)
def opinions():
    """clip idx -> (inaSpeechSegmenter P(female), unit d-vector); clips without an opinion are left out."""
    z = np.load(TEACHERS)
    if str(z["rows"]) != DD.rows_key(DD.teacher_clips(all_clips())):
        raise RuntimeError(f"{TEACHERS} was made from other clips.csv rows: re-run training/data/teachers.py")
    out = {}
    for i, p, e in zip(z["idx"], z["ina_female"], z["emb"].astype(np.float32)):
        if np.isfinite(p) and np.isfinite(e).all() and np.linalg.norm(e) > 0:
            out[int(i)] = (float(p), e / np.linalg.norm(e))
    return out


def fit_probe(X, y, l2=None, iters=50):
    """L2-regularised logistic regression (Newton steps; P(female) = sigmoid(X w + b)); classes balanced."""
    l2 = PROBE_L2 if l2 is None else l2
    Xb = np.hstack([X, np.ones((len(X), 1), dtype=X.dtype)]).astype(np.float64)
    t = (y == 0).astype(np.float64)  # 1 = female
    cw = np.where(t == 1, 0.5 / max(t.mean(), 1e-6), 0.5 / max(1 - t.mean(), 1e-6))
    w = np.zeros(Xb.shape[1])
    reg = np.full(Xb.shape[1], l2 * len(X)); reg[-1] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-Xb @ w))
        g = Xb.T @ (cw * (p - t)) + reg * w
        H = (Xb * (cw * p * (1 - p))[:, None]).T @ Xb + np.diag(reg + 1e-9)
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return w


def probe_female(w, X):
    return 1 / (1 + np.exp(-(np.hstack([X, np.ones((len(X), 1))]) @ w)))


def labelled(clips, exclude=()):
    """(clip, class) of the gender-labelled clips with teacher opinions, outside the corpora in `exclude`."""
    op = opinions()
    return [(c, y) for c, y in SD.clips_of("gender", clips) if c.idx in op and c.source not in exclude]


@functools.lru_cache(maxsize=None)
def _probe_without(exclude: tuple):
    op = opinions()
    pairs = labelled(all_clips(), exclude)
    return fit_probe(np.stack([op[c.idx][1] for c, _ in pairs]), np.array([y for _, y in pairs]))


@functools.lru_cache(maxsize=1)
def all_clips():
    """clips.csv, read once per process (the probes and the speaker d-vectors both need it)."""
    return D.load_clips()


def probe_without(exclude=()):
    """Probe weights trained on every labelled corpus but those in `exclude`."""
    return _probe_without(tuple(sorted(exclude)))


def teacher_female(targets, exclude=()):
    """Teacher P(female) (INA_WEIGHT-weighted mean) and whether the two teachers agree, for `targets`."""
    op = opinions()
    w = probe_without(exclude)
    ina = np.array([op[c.idx][0] for c in targets])
    probe = probe_female(w, np.stack([op[c.idx][1] for c in targets])) if targets else np.zeros(0)
    return INA_WEIGHT * ina + (1 - INA_WEIGHT) * probe, (ina > 0.5) == (probe > 0.5), ina, probe


def distill_items(clips, exclude=()):
    """(clip, class, soft target) of the unlabelled clips the teachers agree on, for a model trained without the
    corpora in `exclude` (their labels train no probe)."""
    op = opinions()
    targets = [c for c in DD.unlabelled_clips(clips) if c.idx in op]
    pf, agree, _, _ = teacher_female(targets, exclude)
    items = []
    for c, p, a in zip(targets, pf, agree):
        if a and max(p, 1 - p) >= MIN_CONFIDENCE:
            items.append((c, 0 if p > 0.5 else 1, np.array([p, 1 - p], dtype=np.float32)))
    return items


def teacher_report(clips):
    """Per labelled corpus: accuracy of inaSpeechSegmenter, of the probe trained without that corpus, of the target."""
    rep = {}
    for corpus in SD.CORPORA:
        pairs = [(c, y) for c, y in labelled(clips) if c.source == corpus]
        if not pairs:
            continue
        pf, _, ina, probe = teacher_female([c for c, _ in pairs], exclude=(corpus,))
        y = np.array([y for _, y in pairs])
        acc = lambda p: round(float(((p > 0.5) == (y == 0)).mean()), 4)
        rep[corpus] = {"clips": len(pairs), "inaSpeechSegmenter": acc(ina), "resemblyzer_probe": acc(probe),
                       "target": acc(pf)}
    return rep


def main():
    clips = D.load_clips()
    print(json.dumps(teacher_report(clips), indent=1))
    items = distill_items(clips)
    print(f"{len(items)} of {len(DD.unlabelled_clips(clips))} unlabelled clips become targets "
          f"({sum(1 for _, y, _ in items if y == 0)} female)")


if __name__ == "__main__":
    main()
