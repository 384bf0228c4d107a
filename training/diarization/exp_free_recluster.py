"""Experiment (session 31): streams without a count re-cluster their recent windows with the files' free clustering."""
from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np
from scipy.optimize import linear_sum_assignment

from training.diarization import cluster as C, validate as V, simulate as S
from training.diarization.der import der, steps_to_turns


def free_clusters(win_h, E_h, p):
    """The files' free clustering of the history (unit plain rows): (centroids in the centred view, history's mean,
    each history window's cluster), after merge_alike."""
    fc = C.file_clusters(0, win_h, E_h, p, None)
    E, Ea, K, assignment, cents = fc["E"], fc["Ea"], fc["K"], fc["assignment"], fc["centroids"]
    M = C.whitening_matrix(p.whitening)
    if p.alike_merge is not None and M is not None and K > 1:
        cents = C.merge_alike(assignment, K, C.whitened(E, M), Ea, p.alike_merge)
    lab = np.array([int(np.argmax(C.dots(cents, e))) for e in Ea]) if len(cents) else np.zeros(len(E), int)
    return cents, C.mean_rows(E), lab


GREEDY = True


def map_ids(lab, ids_past, K_new, K_known):
    """cluster -> id maximising agreement with the ids already given; clusters left over get new ids."""
    M = np.zeros((K_new, max(K_known, 1)))
    for a, b in zip(lab, ids_past):
        M[a, b] += 1
    out = [-1] * K_new
    if GREEDY:  # the pair agreeing on the most windows first (ties: lowest cluster, then lowest id)
        M = M.copy()
        while M.size and M.max() > 0:
            a, b = divmod(int(np.argmax(M)), M.shape[1])
            out[a] = b
            M[a, :] = 0
            M[:, b] = 0
    else:
        r, c = linear_sum_assignment(-M)
        for a, b in zip(r, c):
            if M[a, b] > 0:
                out[a] = int(b)
    nxt = K_known
    for a in range(K_new):
        if out[a] < 0:
            out[a] = nxt
            nxt += 1
    return out


def free_recluster_assign(win, E, p, maxk, every, min_windows, history, Ew):
    n = len(E)
    P = np.zeros((n, maxk))
    ids = np.zeros(n, int)
    warm = min(n, min_windows - 1)
    ids[:warm], P[:warm] = C.online_assign(Ew[:warm], p, maxk)
    known = int(ids[:warm].max()) + 1 if warm else 0
    cur = None
    for i in range(warm, n):
        if cur is None or (i + 1 - min_windows) % every == 0:
            lo = max(0, i + 1 - history)
            cents, mean, lab = free_clusters(win[lo:i + 1], E[lo:i + 1], p)
            mapping = map_ids(lab[:-1], ids[lo:i], len(cents), known)
            cur = (mapping, cents, mean)
        mapping, cents, mean = cur
        sims = C.dots(cents, C.normalise(E[i] - mean))
        k = int(np.argmax(sims))
        ids[i] = min(mapping[k], maxk - 1)
        known = max(known, ids[i] + 1)
        probs = C.softmax([p.temperature * float(x) for x in sims])
        for a, b in enumerate(mapping):
            if b < maxk:
                P[i, b] += probs[a]
    return ids, P


def score(recs, p, cfg):
    rows = []
    for r in recs:
        win, E = V.windows(r, p)
        steps = len(r["levels"])
        n = r["meta"]["speakers"]
        row = {"n": n, "condition": r["meta"]["condition"]}
        if len(win) == 0:
            continue
        E = C.normalise(np.asarray(E, np.float64))
        Ew = C.whitened(E, C.whitening_matrix(p.whitening))
        if cfg is None:
            assigned, P = C.online_assign(Ew, p, p.max_speakers)
        else:
            assigned, P = free_recluster_assign(np.asarray(win), E, p, p.max_speakers, cfg["every"], cfg["min"], cfg["history"], Ew)
        lab = C.labels_of(C.step_probs(steps, win, P, p.hop_steps, p.max_speakers, False))
        d = der(r["turns"], steps_to_turns(lab, r["speech"], V.STEP_S))
        sp = r["speech"].astype(bool)
        row["online"] = {"err": d["miss"] + d["fa"] + d["conf"], "total": d["total"], "count": len(set(lab[sp].tolist()))}
        rows.append(row)
    return rows


if __name__ == "__main__":
    import json
    corp = S.DEV if sys.argv[1] == "dev" else S.TEST
    recs = V.load(corp)
    p = C.Params.from_manifest()
    for cfg in json.loads(sys.argv[2]):
        t = time.time()
        rows = score(recs, p, cfg)
        out = {"obj": round(V.objective(rows, "online"), 4)}
        for cond in list(S.CONDITIONS) + ["all"]:
            g = [r for r in rows if r["n"] <= 4 and (cond == "all" or r["condition"] == cond)]
            q = V.pooled(g, "online")
            out[cond] = f"{100 * q['der']:.1f}/{100 * q['count_acc']:.0f}%"
        g = [r for r in rows if r["n"] > 4]; q = V.pooled(g, "online"); out["5-6"] = f"{100 * q['der']:.1f}/{100 * q['count_acc']:.0f}%"
        print(json.dumps(cfg), out, f"{time.time() - t:.0f}s", flush=True)
