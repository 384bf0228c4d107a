"""Diarization error rate as /work/speakers-spec.md defines it:

  DER = (missed + false alarm + confusion) / reference speech time

scored on a 10 ms grid, outside a 0.25 s collar around every reference segment boundary (both sides), overlap
scored (a frame with two reference speakers counts twice), with the best one-to-one mapping of hypothesis to
reference speakers (Hungarian on overlap time within the scored frames). Per frame, with Nref and Nhyp speakers
and Ncorr mapped pairs both talking: miss = max(0, Nref - Nhyp), false alarm = max(0, Nhyp - Nref),
confusion = min(Nref, Nhyp) - Ncorr (NIST md-eval's rule).
"""
from __future__ import annotations

import numpy as np

RES = 0.01


def _linear_sum_assignment(M: np.ndarray):
    try:
        from scipy.optimize import linear_sum_assignment
        return linear_sum_assignment(M, maximize=True)
    except ImportError:  # pragma: no cover - small exhaustive fallback
        import itertools
        n, m = M.shape
        best, pairs = -1.0, ([], [])
        if n <= m:
            for perm in itertools.permutations(range(m), n):
                v = sum(M[i, j] for i, j in enumerate(perm))
                if v > best:
                    best, pairs = v, (list(range(n)), list(perm))
        else:
            for perm in itertools.permutations(range(n), m):
                v = sum(M[i, j] for j, i in enumerate(perm))
                if v > best:
                    best, pairs = v, (list(perm), list(range(m)))
        return np.array(pairs[0], int), np.array(pairs[1], int)


def _grid(turns, names, n_frames):
    A = np.zeros((n_frames, len(names)), dtype=bool)
    for spk, s, e in turns:
        a, b = int(round(s / RES)), int(round(e / RES))
        A[max(a, 0):min(b, n_frames), names.index(spk)] = True
    return A


def steps_to_turns(labels, speech, step_s: float = 0.064):
    """Per-step labels (any hashable) on steps where `speech` is true -> [(label, start_s, end_s)]."""
    out = []
    cur, start = None, 0
    for s, (lab, sp) in enumerate(zip(list(labels) + [None], list(speech) + [False])):
        key = lab if sp else None
        if key != cur:
            if cur is not None:
                out.append((cur, start * step_s, s * step_s))
            cur, start = key, s
    return out


def der(reference, hypothesis, collar: float = 0.25) -> dict:
    """reference, hypothesis: [(speaker, start_s, end_s)]. Returns {der, miss, fa, conf, total (s), mapping}."""
    end = max([e for _, _, e in reference] + [e for _, _, e in hypothesis] + [0.0])
    n = int(np.ceil(end / RES)) + 1
    rn = sorted({r[0] for r in reference}, key=str)
    hn = sorted({h[0] for h in hypothesis}, key=str)
    R, H = _grid(reference, rn, n), _grid(hypothesis, hn, n)
    scored = np.ones(n, dtype=bool)
    c = int(round(collar / RES))
    for _, s, e in reference:
        for t in (s, e):
            k = int(round(t / RES))
            scored[max(k - c, 0):min(k + c, n)] = False
    R, H = R[scored], H[scored]
    mapping = {}
    ncorr = np.zeros(R.shape[0])
    if rn and hn:
        M = R.T.astype(float) @ H.astype(float)  # [ref, hyp] overlap frames
        ri, hi = _linear_sum_assignment(M)
        for r, h in zip(ri, hi):
            if M[r, h] > 0:
                mapping[hn[h]] = rn[r]
                ncorr += R[:, r] & H[:, h]
    nref, nhyp = R.sum(1), H.sum(1)
    miss = np.maximum(nref - nhyp, 0).sum() * RES
    fa = np.maximum(nhyp - nref, 0).sum() * RES
    conf = (np.minimum(nref, nhyp) - ncorr).sum() * RES
    total = nref.sum() * RES
    return {"der": (miss + fa + conf) / total if total > 0 else 0.0, "miss": miss, "fa": fa, "conf": conf,
            "total": total, "mapping": mapping}
