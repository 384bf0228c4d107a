"""Speaker map v1 (/work/speakers-spec.md, models/speakers/manifest.json "speaker_map"): the reference the
TypeScript service follows. Files: segments -> agglomerative centroid linkage -> refine -> dissolve -> number by
first appearance. Streams: one pass, a new speaker when no centroid is close enough. Both: per-window softmax over
cosines, averaged over the windows covering each 64 ms step.

Everything is float64; embeddings are L2-normalised again on the way in (the service reads float32/rounded ones).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

WINDOW_STEPS = 25
STEP_S = 0.064


@dataclass
class Params:
    hop_steps: int = 12
    gate_db: float = -50.0
    min_voiced_steps: int = 8
    segment_threshold: float = 0.8
    merge_threshold: float = 0.7
    refine_iterations: int = 2
    min_speaker_s: float = 2.0
    temperature: float = 10.0
    online_threshold: float = 0.7
    max_speakers: int = 10

    def as_dict(self) -> dict:
        return asdict(self)


def normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.ndim == 1:
        n = float(np.sqrt(v @ v))
        return v / n if n > 0 else v
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    return e / e.sum()


# ------------------------------------------------------------------ 1. windows
def num_windows(num_steps: int, hop: int) -> int:
    """Windows j with j*hop < num_steps."""
    return -(-num_steps // hop) if num_steps > 0 else 0


def voiced_counts(levels: np.ndarray, hop: int, gate_db: float) -> np.ndarray:
    """Voiced steps of each window [j*hop, j*hop+25) (steps past the end count as not voiced)."""
    v = np.asarray(levels) >= gate_db
    c = np.concatenate([[0], np.cumsum(v)])
    S = v.size
    starts = np.arange(num_windows(S, hop)) * hop
    ends = np.minimum(starts + WINDOW_STEPS, S)
    return (c[ends] - c[starts]).astype(int)


def embedded_windows(levels: np.ndarray, p: Params) -> np.ndarray:
    """Indexes j of the windows that are embedded (>= min_voiced_steps voiced steps)."""
    return np.nonzero(voiced_counts(levels, p.hop_steps, p.gate_db) >= p.min_voiced_steps)[0]


# ------------------------------------------------------------------ 2. files
def _centroid(E: np.ndarray, members: list[int]) -> np.ndarray:
    s = np.zeros(E.shape[1])
    for m in members:  # summed in member order (the TypeScript loop does the same)
        s = s + E[m]
    return normalise(s)


def segments(win: np.ndarray, E: np.ndarray, tau_seg: float) -> list[list[int]]:
    """2a. Rows of E (embedded windows in time order, window indexes `win`) grouped into segments."""
    segs: list[list[int]] = []
    acc = None
    for i in range(len(win)):
        if segs and win[i] - 1 == win[i - 1] and float(E[i] @ normalise(acc)) >= tau_seg:
            segs[-1].append(i)
            acc = acc + E[i]
        else:
            segs.append([i])
            acc = E[i].copy()
    return segs


def agglomerate(E: np.ndarray, clusters: list[list[int]], tau: float, max_speakers: int,
                target: int | None, linkage: str = "centroid") -> list[list[int]]:
    """2b. Centroid linkage; merged cluster keeps the lower index.

    linkage="average" is NOT the spec: a proposed change (see README), the mean of the pairwise window cosines
    (sum_a . sum_b) / (n_a n_b), which does not grow with the clusters' sizes as the centroids' cosine does."""
    clusters = [list(c) for c in clusters]
    if linkage == "average":
        C = np.stack([sum(E[m] for m in c) / len(c) for c in clusters]) if clusters else np.zeros((0, E.shape[1]))
    else:
        C = np.stack([_centroid(E, c) for c in clusters]) if clusters else np.zeros((0, E.shape[1]))
    S = C @ C.T  # cos(c_a, c_b) for a < b; the rest -inf
    S[np.tril_indices(len(clusters))] = -np.inf
    while len(clusters) > 1:
        n = len(clusters)
        flat = int(np.argmax(S))  # first maximum in row-major order: smallest a, then smallest b
        a, b = divmod(flat, n)
        best = S[a, b]
        if target is not None:
            go = n > target
        else:
            go = best >= tau or n > max_speakers
        if not go:
            break
        clusters[a] = clusters[a] + clusters[b]
        del clusters[b]
        C = np.delete(C, b, axis=0)
        S = np.delete(np.delete(S, b, axis=0), b, axis=1)
        C[a] = sum(E[m] for m in clusters[a]) / len(clusters[a]) if linkage == "average" else _centroid(E, clusters[a])
        s = C @ C[a]
        S[a, a + 1:] = s[a + 1:]
        S[:a, a] = s[:a]
    return clusters


def refine(E: np.ndarray, clusters: list[list[int]], iterations: int) -> list[list[int]]:
    """2c. Reassign every window to its nearest centroid, R times; empty clusters dropped (order kept)."""
    for _ in range(iterations):
        C = np.stack([_centroid(E, c) for c in clusters])
        k = np.argmax(E @ C.T, axis=1)  # first maximum: lowest k
        clusters = [[i for i in range(len(E)) if k[i] == c] for c in range(len(clusters))]
        clusters = [c for c in clusters if c]
    return clusters


def dissolve(E: np.ndarray, clusters: list[list[int]], hop: int, min_speaker_s: float,
             target: int | None) -> list[list[int]]:
    """2d. Remove the smallest cluster while it is shorter than min_speaker_s."""
    clusters = [list(c) for c in clusters]
    C = [_centroid(E, c) for c in clusters]
    while len(clusters) > 1 and (target is None or len(clusters) > target):
        sizes = [len(c) for c in clusters]
        k = int(np.argmin(sizes))  # ties: lowest index
        if sizes[k] * hop * STEP_S >= min_speaker_s:
            break
        moved = clusters.pop(k)
        del C[k]
        Cm = np.stack(C)
        for i in moved:
            clusters[int(np.argmax(Cm @ E[i]))].append(i)
        C = [_centroid(E, c) for c in clusters]
    return clusters


def cluster_file(win: np.ndarray, E: np.ndarray, p: Params, num_speakers: int | None = None,
                 linkage: str = "centroid", count_mode: str = "merge") -> tuple[np.ndarray, np.ndarray]:
    """2a-e for a whole channel. Returns (centroids [K, 256] in speaker order, v [n_embedded, K] cosines)."""
    E = normalise(E)
    if len(win) == 0:
        return np.zeros((0, E.shape[1] if E.ndim == 2 else 256)), np.zeros((0, 0))
    cl = segments(win, E, p.segment_threshold)
    if count_mode == "dissolve" and num_speakers is not None:
        # NOT the spec (a proposed change): a given count is reached by dissolving the smallest clusters of the
        # unconstrained clustering (then merging, if still too many), not by forced centroid merges
        cl = agglomerate(E, cl, p.merge_threshold, p.max_speakers, None, linkage)
        cl = refine(E, cl, p.refine_iterations)
        cl = dissolve(E, cl, p.hop_steps, p.min_speaker_s, None)
        cl = dissolve(E, cl, p.hop_steps, float("inf"), num_speakers)
    else:
        cl = agglomerate(E, cl, p.merge_threshold, p.max_speakers, num_speakers, linkage)
        cl = refine(E, cl, p.refine_iterations)
        cl = dissolve(E, cl, p.hop_steps, p.min_speaker_s, num_speakers)
    cl.sort(key=lambda c: min(c))  # 2e: order of each cluster's earliest member window
    C = np.stack([_centroid(E, c) for c in cl])
    return C, E @ C.T


# ------------------------------------------------------------------ 3. step probabilities
def step_probs(num_steps: int, win: np.ndarray, P: np.ndarray, hop: int, stream: bool) -> np.ndarray:
    """Rule 3: probs [num_steps, K] from the embedded windows' probability rows P (window indexes `win`)."""
    if len(win) == 0:
        return np.zeros((num_steps, 1))
    K = P.shape[1]
    starts = np.asarray(win) * hop
    acc = np.zeros((num_steps, K))
    cnt = np.zeros(num_steps)
    for j, st in enumerate(starts):  # each embedded window adds its row to the steps it covers, in window order
        acc[st:st + WINDOW_STEPS] += P[j]
        cnt[st:st + WINDOW_STEPS] += 1
    out = np.zeros((num_steps, K))
    cov = cnt > 0
    out[cov] = acc[cov] / cnt[cov, None]
    latest = np.searchsorted(starts, np.arange(num_steps), side="right") - 1  # latest embedded window with jH <= s
    for s in np.nonzero(~cov)[0]:
        if latest[s] >= 0:
            out[s] = P[latest[s]]
        elif not stream:
            out[s] = P[0]  # the first embedded window after s
        # streams: zeros
    return out


def labels_of(probs: np.ndarray) -> np.ndarray:
    return np.argmax(probs, axis=1)  # ties: lowest


def file_map(levels: np.ndarray, win: np.ndarray, E: np.ndarray, p: Params,
             num_speakers: int | None = None, linkage: str = "centroid", count_mode: str = "merge") -> dict:
    """The whole file rule: {labels [S] 0-based, probs [S, K], K}. `win`: the embedded windows, E their embeddings."""
    S = len(levels)
    if len(win) == 0:
        probs = np.zeros((S, 1))
        return {"labels": labels_of(probs), "probs": probs, "K": 1}
    C, V = cluster_file(win, E, p, num_speakers, linkage, count_mode)
    P = np.stack([softmax(p.temperature * v) for v in V])
    probs = step_probs(S, win, P, p.hop_steps, stream=False)
    return {"labels": labels_of(probs), "probs": probs, "K": C.shape[0]}


# ------------------------------------------------------------------ 4. streams
def online_assign(E: np.ndarray, p: Params, confirm: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """One pass over the embedded windows. Returns (assigned speaker per window, P [n, max_speakers]).

    confirm > 1 is NOT the spec (a proposed change): a window below tau_on opens a new speaker only when it is the
    `confirm`-th such window in a row (the new centroid is their sum); until then it joins the closest speaker
    without moving its centroid."""
    E = normalise(E)
    sums: list[np.ndarray] = []
    C: list[np.ndarray] = []
    P = np.zeros((len(E), p.max_speakers))
    assigned = np.zeros(len(E), dtype=int)
    pending: list[np.ndarray] = []
    for i, e in enumerate(E):
        K = len(C)
        v = np.array([float(c @ e) for c in C])
        if K > 0 and (v.max() >= p.online_threshold or K == p.max_speakers):
            pending = []
            k = int(np.argmax(v))
            sums[k] = sums[k] + e
            C[k] = normalise(sums[k])
        elif K > 0 and len(pending) + 1 < confirm:
            pending.append(e)
            k = int(np.argmax(v))
        elif confirm > 1 and K > 0:
            k = K
            sums.append(sum(pending) + e)
            C.append(normalise(sums[-1]))
            pending = []
        else:
            k = K
            sums.append(e.copy())
            C.append(e.copy())
        assigned[i] = k
        v2 = np.array([float(c @ e) for c in C])
        P[i, :len(C)] = softmax(p.temperature * v2)
    return assigned, P


def stream_map(levels: np.ndarray, win: np.ndarray, E: np.ndarray, p: Params, confirm: int = 1) -> dict:
    """Streams: {labels [S], probs [S, max_speakers], K}. Step s uses only windows starting at or before s."""
    S = len(levels)
    if len(win) == 0:
        probs = np.zeros((S, 1))
        return {"labels": labels_of(probs), "probs": probs, "K": 1}
    assigned, P = online_assign(E, p, confirm)
    probs = step_probs(S, win, P, p.hop_steps, stream=True)
    return {"labels": labels_of(probs), "probs": probs, "K": int(assigned.max()) + 1}


def run(levels: np.ndarray, embed, p: Params, num_speakers: int | None = None) -> tuple[dict, dict]:
    """Files and streams from step levels and embed(window index) -> 256-d (or a dict window -> vector)."""
    win = embedded_windows(levels, p)
    get = embed.__getitem__ if isinstance(embed, dict) else embed
    E = np.stack([np.asarray(get(int(j)), dtype=np.float64) for j in win]) if len(win) else np.zeros((0, 256))
    return file_map(levels, win, E, p, num_speakers), stream_map(levels, win, E, p)
