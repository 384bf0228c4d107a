"""Speaker map v1.1 (/work/speakers-spec.md section 2; the TypeScript service is the truth where they differ): the
same arithmetic as src/speakers/clustering.ts and src/speakers/file-map.ts, in numpy.

Files (`file_map`, FileSpeakerMap.finish) embed the windows with at least min_voiced_steps voiced steps; streams also
their sparse windows (sparse_windows, speakers 1.9.0), scored without being assigned (Sparse).
Files: the windows mostly speech are clustered, optionally centred (the mean
embedding of the clustered windows taken away from all windows, `center`), by `cluster_windows` (clusterWindows):
segments -> centroid-linkage agglomeration (down to merge_threshold, or the caller's count with the long/short rule)
-> choose speakers (the long clusters; merged while over the cap; the short ones' windows join the nearest speaker)
-> refine -> numbered by first window -> (no count given) speakers a learnt pair rule calls one voice merged
(`merge_alike`: their centroids of the whitened, uncentred windows and of the compared windows, and their sizes).
Speakers that win no speech step are dropped, the rest renumbered by their first speech step. Streams (`stream_map`,
OnlineSpeakers): one pass, a new speaker when no centroid is close enough.
Both: per-window softmax over cosines (files with `whitened_scores`: of the whitened windows to the speakers' whitened
centroids, `whitened_centroids`), averaged over the windows covering each 64 ms step (stepProbabilities).

Bit for bit with the TypeScript where it can be: float64 throughout, every dot product and sum in the TypeScript's
order (np.cumsum is a sequential sum), the same tie rules, the step probabilities accumulated in float32 like its
Float32Array. Only exp may differ by an ulp (math.exp vs V8's Math.exp), which the float32 step values absorb.
The older v1 (dissolve after refine, forced merges for a count, the average-linkage and count-by-dissolving
variants) is gone: README.md says what it scored.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

WINDOW_STEPS = 25
STEP_S = 0.064
MIN_SPEECH_SHARE = 0.5  # file-map.ts: a window is clustered when at least this share of its steps is speech
MANIFEST = Path(__file__).resolve().parents[2] / "models/speakers/manifest.json"


@dataclass
class Params:
    """models/speakers/manifest.json "speaker_map", same names (defaults: the manifest of speakers 1.0.0)."""
    hop_steps: int = 12
    gate_db: float = -50.0
    min_voiced_steps: int = 16
    segment_threshold: float = 0.6
    merge_threshold: float = 0.15
    refine_iterations: int = 2
    min_speaker_s: float = 8.0
    min_speaker_share: float = 0.2
    temperature: float = 3.0
    online_threshold: float = 0.7
    # streams: the similarity that keeps a window with a known speaker falls by this per speaker beyond the first,
    # so each further speaker needs a window further from all the others to open (speakers 1.1.0)
    online_threshold_step: float = 0.0
    # streams' provisional answers: step s takes the latest window ending at or before s + this (speakers 1.3.1)
    provisional_lookahead_steps: int = 0
    max_speakers: int = 10
    center: bool = True
    # streams told num_speakers <= recluster_max_speakers re-cluster their recent windows (Reclustering)
    recluster_max_speakers: int = 2
    recluster_min_windows: int = 8
    recluster_every: int = 8
    recluster_history: int = 256
    # streams without a count: after this many windows (0 = never), every free_recluster_every windows the last
    # recluster_history windows are clustered as a file's are (free_recluster_assign, speakers 1.8.0)
    free_recluster_min_windows: int = 0
    # ... and they re-cluster every this many windows; 0 = recluster_every (absent before 1.8.1)
    free_recluster_every: int = 0
    # a file in models/speakers/ whose matrix each unit embedding is multiplied by (then unit again): streams compare
    # the whitened windows (OnlineSpeakers / Reclustering; whitening.py, speakers 1.4.0), files merge their speakers'
    # whitened centroids (merge_alike, speakers 1.5.0); "" = none
    whitening: str = ""
    # files without a count, after clustering: the rule that says two speakers are one (merge_alike, speakers 1.6.0):
    # {"bias", one weight per PAIR_FEATURES name, "min_probability", "max_windows"}; None = no such merge
    alike_merge: dict | None = None
    # files: each window scored against the speakers' centroids of the whitened, uncentred windows instead of the
    # compared ones (speakers 1.7.0; needs `whitening`; file_map)
    whitened_scores: bool = False
    # streams also embed the windows with at least this many voiced steps but fewer than min_voiced_steps ("sparse":
    # mostly a turn's first and last windows); each is scored against the speakers as they stand, joins or opens none,
    # and counts in the steps it covers, provisional and final (speakers 1.9.0; sparse_windows); 0 = none
    sparse_min_voiced_steps: int = 0
    # file jobs embed a window only when at most max_non_speech_steps of its first `steps` steps are voiced yet not
    # speech (and at least min_speech_steps are speech): {"steps", "min_speech_steps", "max_non_speech_steps"}, the
    # manifest's file_speech_gate (speakers 1.9.1; gate_passes; streams are not gated); None = none
    file_speech_gate: dict | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict, base: "Params | None" = None) -> "Params":
        """`d`'s known keys over `base` (default: the manifest's), so an older parameter file still loads."""
        base = base or cls.from_manifest()
        names = {f.name for f in fields(cls)}
        return cls(**{**base.as_dict(), **{k: v for k, v in d.items() if k in names}})

    @classmethod
    def from_manifest(cls, path: Path | str = MANIFEST) -> "Params":
        block = json.load(open(path))["speaker_map"]
        optional = {"whitening": "", "alike_merge": None, "whitened_scores": False,  # absent before 1.4.0 / 1.6.0 / 1.7.0
                    "free_recluster_min_windows": 0,  # absent before 1.8.0
                    "free_recluster_every": 0,  # absent before 1.8.1
                    "sparse_min_voiced_steps": 0,  # absent before 1.9.0
                    "file_speech_gate": None}  # absent before 1.9.1
        missing = [f.name for f in fields(cls) if f.name not in block and f.name not in optional]
        if missing:
            raise KeyError(f"{path}: speaker_map lacks {missing}")
        return cls(**{f.name: block.get(f.name, optional.get(f.name)) for f in fields(cls)})


# ------------------------------------------------------------------ arithmetic in the TypeScript's order
def dots(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """dot(a, b) of each row a of A, summed left to right like clustering.ts dot()."""
    A = np.asarray(A, dtype=np.float64)
    if A.shape[-1] == 0:
        return np.zeros(A.shape[:-1])
    return np.cumsum(A * b, axis=-1)[..., -1]


def dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(dots(a, b))


def normalise(v: np.ndarray) -> np.ndarray:
    """clustering.ts normalise(): v * (1 / sqrt(sum of squares)), zeros stay zeros (rows of a matrix each)."""
    v = np.asarray(v, dtype=np.float64)
    n = dots(v, v)[..., None]
    s = np.where(n > 0, 1.0 / np.sqrt(np.where(n > 0, n, 1.0)), 0.0)
    return v * s


def softmax(z) -> np.ndarray:
    """clustering.ts softmax(): exp(x - max), summed left to right."""
    z = [float(x) for x in z]
    if not z:
        return np.zeros(0)
    m = max(z)
    e = np.array([math.exp(x - m) for x in z])
    return e / float(np.cumsum(e)[-1])


def _sum_rows(E: np.ndarray, members) -> np.ndarray:
    return np.cumsum(E[list(members)], axis=0)[-1]


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


def gate_passes(levels: np.ndarray, p: Params, speech=None, g: dict | None = None) -> np.ndarray:
    """Per window: whether a speech gate (`g`, e.g. p.file_speech_gate) lets it be embedded (encoder-stage.ts
    closeWindow): among its first g["steps"] steps, at least min_speech_steps speech and at most
    max_non_speech_steps voiced yet not speech (`speech`: the speech model's per-step decision; steps past the end
    count as neither). All true without a gate."""
    n = num_windows(len(levels), p.hop_steps)
    if not g:
        return np.ones(n, dtype=bool)
    if speech is None:
        raise ValueError("a speech-gated schedule needs the per-step speech decisions")
    sp = np.asarray(speech, dtype=bool)[:len(levels)]
    other = (np.asarray(levels) >= p.gate_db) & ~sp
    cs, co = (np.concatenate([[0], np.cumsum(x)]) for x in (sp, other))
    starts = np.arange(n) * p.hop_steps
    ends = np.minimum(starts + g["steps"], len(levels))
    most = g.get("max_non_speech_steps")
    ok = (cs[ends] - cs[starts]) >= g["min_speech_steps"]
    return ok & ((co[ends] - co[starts]) <= most) if most is not None else ok


def embedded_windows(levels: np.ndarray, p: Params, speech=None, gate: dict | None = None) -> np.ndarray:
    """Indexes j of the windows that are embedded (>= min_voiced_steps voiced steps; `gate` passed: a file job's are
    embedded_windows(levels, p, speech, p.file_speech_gate), a stream's have no gate)."""
    return np.nonzero((voiced_counts(levels, p.hop_steps, p.gate_db) >= p.min_voiced_steps) & gate_passes(levels, p, speech, gate))[0]


def sparse_windows(levels: np.ndarray, p: Params, speech=None) -> np.ndarray:
    """Indexes j of the windows a stream embeds to score only (sparse_min_voiced_steps <= voiced < min_voiced_steps).
    `speech` is not read (streams have no speech gate): the signature is embedded_windows', for validate.windows."""
    if p.sparse_min_voiced_steps <= 0:
        return np.zeros(0, dtype=int)
    c = voiced_counts(levels, p.hop_steps, p.gate_db)
    return np.nonzero((c >= p.sparse_min_voiced_steps) & (c < p.min_voiced_steps))[0]


# ------------------------------------------------------------------ 2. file clustering (clusterWindows)
class _Cluster:
    __slots__ = ("members", "centroid", "view_sum")

    def __init__(self, members: list[int], E: np.ndarray, V: np.ndarray | None = None):
        self.members = members
        self.centroid = normalise(_sum_rows(E, members))
        # the sum of the members' rows of the second view (keep_apart): a merge adds the two sums (clustering.ts)
        self.view_sum = _sum_rows(V, members) if V is not None else None

    def merged(self, other: "_Cluster", E: np.ndarray) -> "_Cluster":
        c = _Cluster(sorted(self.members + other.members), E)
        if self.view_sum is not None:
            c.view_sum = self.view_sum + other.view_sum
        return c


class Clusterer:
    """clustering.ts Clusterer over one channel's unit embeddings E (rows, window order); each step returns lists of
    member-index lists, so a caller can look between the steps (golden.py's trace)."""

    def __init__(self, E: np.ndarray, p: Params, V: np.ndarray | None = None, apart_rule: dict | None = None):
        """V, apart_rule (files without a count, speakers 1.7.0): each window's second view (whitened, uncentred) and
        the pair rule under whose keep_apart_below two long clusters are not merged by the agglomeration."""
        self.E, self.p = E, p
        self.V, self.apart_rule = (V, apart_rule) if apart_rule is not None else (None, None)
        self.hop_s = p.hop_steps * STEP_S
        self.min_speaker_s = min(p.min_speaker_s, p.min_speaker_share * len(E) * self.hop_s)

    def is_long(self, members) -> bool:
        return len(members) * self.hop_s >= self.min_speaker_s

    def segments(self, win) -> list[list[int]]:
        """a. Runs of consecutive windows each similar enough to the run so far."""
        out: list[list[int]] = []
        cur: list[int] = []
        acc = np.zeros(0)
        for i in range(len(win)):
            e = self.E[i]
            joins = bool(cur) and int(win[i]) == int(win[i - 1]) + 1 and dot(e, normalise(acc)) >= self.p.segment_threshold
            if not joins:
                if cur:
                    out.append(cur)
                cur, acc = [], np.zeros(e.shape[0])
            cur.append(i)
            acc = acc + e
        out.append(cur)
        return out

    def apart(self, best: float, a: _Cluster, b: _Cluster) -> bool:
        """Two long clusters the pair rule calls two voices (pair_logit under its keep_apart_below): keep_apart."""
        if self.apart_rule is None or not (self.is_long(a.members) and self.is_long(b.members)):
            return False
        r = self.apart_rule
        f = _pair_row(normalise(a.view_sum), normalise(b.view_sum), best, len(a.members), len(b.members),
                      int(r["max_windows"]))
        return pair_logit(r, f) < logit(float(r["keep_apart_below"]))

    def _merge_closest(self, lst: list[_Cluster], go, apart=None) -> None:
        """Merges the most similar pair (ties: lowest a, then lowest b; merged keeps a's place, members sorted)
        while go(best, a, b) says so; a pair apart(best, a, b) says to keep apart is skipped (its similarity -inf)
        until either of the two changes."""
        n = len(lst)
        S = np.full((n, n), -np.inf)
        for a in range(n - 1):
            S[a, a + 1:] = dots(np.stack([c.centroid for c in lst[a + 1:]]), lst[a].centroid)
        while len(lst) > 1:
            a, b = divmod(int(np.argmax(S)), len(lst))  # first maximum in row-major order
            if not go(S[a, b], lst[a], lst[b]):
                return
            if apart is not None and apart(S[a, b], lst[a], lst[b]):
                S[a, b] = -np.inf
                continue
            lst[a] = lst[a].merged(lst[b], self.E)
            del lst[b]
            S = np.delete(np.delete(S, b, axis=0), b, axis=1)
            c = lst[a].centroid
            if a + 1 < len(lst):
                S[a, a + 1:] = dots(np.stack([x.centroid for x in lst[a + 1:]]), c)
            if a > 0:
                S[:a, a] = dots(np.stack([x.centroid for x in lst[:a]]), c)

    def agglomerate(self, segs: list[list[int]], num_speakers: int | None) -> list[list[int]]:
        """b. Down to merge_threshold, or (a count) until a merge of two long clusters would leave fewer than it."""
        lst = [_Cluster(list(m), self.E, self.V if num_speakers is None else None) for m in segs]
        if num_speakers is None:
            self._merge_closest(lst, lambda best, a, b: best >= self.p.merge_threshold,
                                self.apart if self.apart_rule is not None else None)
        else:
            enough_long = lambda: sum(self.is_long(c.members) for c in lst) > num_speakers
            self._merge_closest(lst, lambda best, a, b: len(lst) > num_speakers
                                and (not (self.is_long(a.members) and self.is_long(b.members)) or enough_long()))
        return [c.members for c in lst]

    def choose_speakers(self, clusters: list[list[int]], max_speakers: int, num_speakers: int | None) -> list[list[int]]:
        """c. The long clusters (the longest, if none; the longest few up to the count) are the speakers, merged to the
        count or under the cap; the short clusters' windows join the nearest speaker (centroids before the joins)."""
        by_length = sorted(range(len(clusters)), key=lambda k: (-len(clusters[k]), k))
        wanted = num_speakers if num_speakers is not None else 0
        keep = {k for i, k in enumerate(by_length) if i == 0 or self.is_long(clusters[k]) or i < wanted}
        if num_speakers is None:
            keep |= self.distinct_short(clusters, keep)
        speakers = [_Cluster(list(m), self.E) for k, m in enumerate(clusters) if k in keep]
        short = [m for k, m in enumerate(clusters) if k not in keep]
        cap = num_speakers if num_speakers is not None else max_speakers
        self._merge_closest(speakers, lambda *_: len(speakers) > cap)
        if not short:
            return [c.members for c in speakers]
        C = np.stack([c.centroid for c in speakers])
        members = [list(c.members) for c in speakers]
        for m in short:
            for i in m:
                members[int(np.argmax(dots(C, self.E[i])))].append(i)
        return [sorted(m) for m in members]

    def distinct_short(self, clusters: list[list[int]], keep: set[int]) -> set[int]:
        """c'. (speakers 1.9.2) The short clusters of at least the rule's short_speaker_min_s (window hops) whose
        probability of one voice under the rule is below short_speaker_below with every speaker and with every such
        cluster taken before them (cluster order): speakers too. A voice heard for 2-5 s of a conversation is no
        longer folded into the closest speaker when the rule is that sure it is another. Sides: unit sums of the
        members' rows of the second view (ascending), their centroids' cosine in the clustered view."""
        r = self.apart_rule
        if r is None or r.get("short_speaker_below") is None:
            return set()
        bar, min_s, cap = logit(float(r["short_speaker_below"])), float(r["short_speaker_min_s"]), int(r["max_windows"])
        side = lambda m: (normalise(_sum_rows(self.V, m)), _Cluster(m, self.E).centroid, len(m))
        taken = [side(clusters[k]) for k in sorted(keep)]
        out = set()
        for k in range(len(clusters)):
            if k in keep or len(clusters[k]) * self.hop_s < min_s:
                continue
            s = side(clusters[k])
            if all(pair_logit(r, _pair_row(s[0], t[0], dot(s[1], t[1]), s[2], t[2], cap)) < bar for t in taken):
                out.add(k)
                taken.append(s)
        return out

    def refine(self, speakers: list[list[int]]) -> list[list[int]]:
        """d. Every window to its nearest centroid (ties: lowest), refine_iterations times; empty ones dropped."""
        for _ in range(self.p.refine_iterations):
            C = [_Cluster(m, self.E).centroid for m in speakers]
            k = np.argmax(np.stack([dots(self.E, c) for c in C], axis=1), axis=1)
            speakers = [m for m in ([int(i) for i in np.nonzero(k == j)[0]] for j in range(len(C))) if m]
        return speakers


def cluster_windows(win, E: np.ndarray, p: Params, max_speakers: int, num_speakers: int | None = None,
                    V: np.ndarray | None = None) -> tuple[int, np.ndarray, np.ndarray]:
    """clusterWindows: unit embeddings E of the windows `win` (window order) -> (speakers, assignment [n] numbered by
    first window, centroids [K, d] in that order). V (the windows whitened, uncentred): with no count and
    `p.alike_merge` holding keep_apart_below, the agglomeration keeps apart two long clusters the rule calls two voices."""
    E = np.asarray(E, dtype=np.float64)
    if len(win) == 0:
        return 0, np.zeros(0, dtype=int), np.zeros((0, E.shape[1] if E.ndim == 2 else 256))
    c = Clusterer(E, p, V, apart_rule(p, num_speakers, V))
    segs = c.segments(win)  # agglomerate() builds its own clusters from them, so both passes start from these
    chosen = None
    if num_speakers is not None:
        # the count given: the free clustering merged down to it, when it found at least that many speakers (held-out
        # DER with the count given 14.4 -> 13.0 %, speakers 1.3.1); else merges that stop at the count
        free = c.choose_speakers(c.agglomerate(segs, None), num_speakers, None)
        chosen = free if len(free) >= num_speakers else None
    if chosen is None:
        chosen = c.choose_speakers(c.agglomerate(segs, num_speakers), max_speakers, num_speakers)
    speakers = c.refine(chosen)
    order = sorted(range(len(speakers)), key=lambda k: min(speakers[k]))  # e. by earliest window
    assignment = np.zeros(len(win), dtype=int)
    for rank, k in enumerate(order):
        assignment[speakers[k]] = rank
    return len(speakers), assignment, np.stack([_Cluster(speakers[k], E).centroid for k in order])


# ------------------------------------------------------------------ 3. step probabilities
def window_probs(E: np.ndarray, centroids: np.ndarray, temperature: float) -> np.ndarray:
    """windowProbabilities for each row of E: softmax(T * cos(e, c_k)) -> [n, K]."""
    K = len(centroids)
    if K == 0:
        return np.zeros((len(E), 0))
    return np.stack([softmax([temperature * dot(e, c) for c in centroids]) for e in E]) if len(E) else np.zeros((0, K))


def step_probs(num_steps: int, win, P: np.ndarray, hop: int, width: int, look_ahead: bool) -> np.ndarray:
    """stepProbabilities: [num_steps, width] float32 (as its Float32Array: every sum and mean rounded to float32)."""
    out = np.zeros((num_steps, width), dtype=np.float32)
    if len(win) == 0:
        return out
    P = np.asarray(P, dtype=np.float64)
    K = P.shape[1]
    starts = np.asarray(win, dtype=int) * hop
    cnt = np.zeros(num_steps, dtype=int)
    for j, st in enumerate(starts):  # window order, as each step's sum runs
        sl = slice(st, min(st + WINDOW_STEPS, num_steps))
        out[sl, :K] = (out[sl, :K].astype(np.float64) + P[j]).astype(np.float32)
        cnt[sl] += 1
    cov = cnt > 0
    out[cov] = (out[cov].astype(np.float64) / cnt[cov, None]).astype(np.float32)
    latest = np.searchsorted(starts, np.arange(num_steps), side="right") - 1  # latest window with jH <= s
    for s in np.nonzero(~cov)[0]:
        if latest[s] >= 0:
            out[s, :K] = P[latest[s]].astype(np.float32)
        elif look_ahead:
            out[s, :K] = P[0].astype(np.float32)  # the first embedded window after s (files)
        # streams: zeros
    return out


def labels_of(probs: np.ndarray) -> np.ndarray:
    return np.argmax(probs, axis=1)  # ties: lowest


# ------------------------------------------------------------------ 2 + 3: a file's channel (FileSpeakerMap.finish)
def mean_rows(E: np.ndarray) -> np.ndarray:
    """clustering.ts meanEmbedding: the rows' mean, each added as e / n in order."""
    return np.cumsum(E / len(E), axis=0)[-1]


def centred(E: np.ndarray, clustered) -> np.ndarray:
    """file-map.ts centred(): every row minus the mean of the `clustered` rows (summed as e / n), unit length again."""
    if len(clustered) == 0:
        return E
    return normalise(E - mean_rows(E[list(clustered)]))


# the pair features of merge_alike's logistic rule, in the order their weighted sum adds them (alike-merge.ts)
PAIR_FEATURES = ("whitened_cosine", "centred_cosine", "log_fewer_windows", "log_more_windows")


def pair_features(assignment: np.ndarray, K: int, W: np.ndarray, Ec: np.ndarray,
                  max_windows: int) -> tuple[list[list[int]], dict]:
    """The K speakers' members (ascending) and, for each pair a < b, PAIR_FEATURES: the cosine of their centroids of
    the whitened windows W, of their centroids of the compared windows Ec, log of the smaller and of the larger
    speaker's number of windows, each counted up to `max_windows` (the largest the rule was fitted on)."""
    members = [[int(i) for i in np.nonzero(assignment == k)[0]] for k in range(K)]
    Wc = [_Cluster(m, W).centroid for m in members]
    Cc = [_Cluster(m, Ec).centroid for m in members]
    out = {}
    for a in range(K):
        for b in range(a + 1, K):
            out[(a, b)] = _pair_row(Wc[a], Wc[b], dot(Cc[a], Cc[b]), len(members[a]), len(members[b]), max_windows)
    return members, out


def _pair_row(wa: np.ndarray, wb: np.ndarray, centred_cosine: float, na: int, nb: int, max_windows: int) -> list[float]:
    """PAIR_FEATURES of two speakers: their whitened centroids, their centred centroids' cosine, their sizes."""
    na, nb = min(na, max_windows), min(nb, max_windows)
    return [dot(wa, wb), float(centred_cosine), math.log(min(na, nb)), math.log(max(na, nb))]


def pair_logit(rule: dict, f) -> float:
    """bias + each weight x its feature, added in PAIR_FEATURES order."""
    z = float(rule["bias"])
    for name, x in zip(PAIR_FEATURES, f):
        z += float(rule[name]) * float(x)
    return z


def logit(q: float) -> float:
    return math.log(q / (1 - q))


def min_logit(rule: dict) -> float:
    return logit(float(rule["min_probability"]))


def merge_alike(assignment: np.ndarray, K: int, W: np.ndarray, Ec: np.ndarray, rule: dict) -> np.ndarray:
    """mergeAlike (alike-merge.ts): the K speakers of `assignment` (0..K-1 per clustered window) that `rule` says are
    one (pair_logit >= min_logit), directly or through another speaker, become one -> the merged speakers' centroids
    of the compared windows Ec (members ascending), ordered by first window."""
    members, features = pair_features(assignment, K, W, Ec, int(rule["max_windows"]))
    bar = min_logit(rule)
    root = list(range(K))

    def find(k: int) -> int:
        while root[k] != k:
            k = root[k]
        return k
    for (a, b), f in features.items():  # a ascending, then b: the TypeScript's loop order
        if pair_logit(rule, f) >= bar:
            ra, rb = find(a), find(b)
            root[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for k in range(K):
        groups.setdefault(find(k), []).extend(members[k])
    merged = sorted((sorted(m) for m in groups.values()), key=lambda m: m[0])
    return np.stack([_Cluster(m, Ec).centroid for m in merged])


def file_clusters(num_steps: int, win, E: np.ndarray, p: Params, num_speakers: int | None = None,
                  max_speakers: int | None = None, speech=None) -> dict:
    """file_map's clustering before any merge: {E (unit), chosen (the clustered windows, indexes into win), Ea (the
    compared windows: centred when `center`), K, assignment, centroids}."""
    win = np.asarray(win, dtype=int)
    E = normalise(np.asarray(E, dtype=np.float64)) if len(win) else np.zeros((0, 256))
    max_speakers = p.max_speakers if max_speakers is None else max_speakers
    idx = np.arange(len(win))
    if speech is not None:
        sp = np.asarray(speech).astype(bool)
        share = np.array([int(sp[j * p.hop_steps:min(num_steps, j * p.hop_steps + WINDOW_STEPS)].sum()) / WINDOW_STEPS
                          for j in win])
        speechy = idx[share >= MIN_SPEECH_SHARE] if len(win) else idx
        chosen = speechy if len(speechy) > 0 else idx
    else:
        chosen = idx
    Ea = centred(E, chosen) if p.center else E
    V = second_view(E[chosen], p, num_speakers)
    K, assignment, cents = cluster_windows(win[chosen], Ea[chosen], p, max_speakers, num_speakers, V)
    return {"E": E, "chosen": chosen, "Ea": Ea, "K": K, "assignment": assignment, "centroids": cents}


def second_view(E: np.ndarray, p: Params, num_speakers: int | None) -> np.ndarray | None:
    """The clustered windows (unit rows E) whitened, where the keep-apart may read them (no count, a rule and a
    whitening); else None."""
    M = whitening_matrix(p.whitening)
    return whitened(E, M) if num_speakers is None and p.alike_merge is not None and M is not None else None


def apart_rule(p: Params, num_speakers: int | None, V: np.ndarray | None) -> dict | None:
    """`p.alike_merge` when the agglomeration keeps pairs apart by it (no count, the second view V, a keep_apart_below)."""
    rule = p.alike_merge
    if num_speakers is None and V is not None and rule is not None and rule.get("keep_apart_below") is not None:
        return rule
    return None


def whitened_centroids(cents: np.ndarray, Ec: np.ndarray, Wc: np.ndarray) -> np.ndarray:
    """whitenedCentroids (file-map.ts): each clustered window (compared view Ec, whitened view Wc, rows alike) counts
    for the centroid of `cents` closest to it (ties: the lowest); each speaker's unit sum of its windows' Wc rows
    (zeros for a speaker no window is closest to)."""
    near = [int(np.argmax(dots(cents, e))) for e in Ec]
    out = np.zeros((len(cents), Wc.shape[1]))
    for k in range(len(cents)):
        members = [i for i, n in enumerate(near) if n == k]
        if members:
            out[k] = _Cluster(members, Wc).centroid
    return out


def file_map(num_steps: int, win, E: np.ndarray, p: Params, num_speakers: int | None = None,
             max_speakers: int | None = None, speech=None) -> dict:
    """A file's channel: {labels [S] 0-based, probs [S, K] float32, K, clustered (indexes into win), centroids [K, d]
    (of the centred windows when `center`), embeddings [n, d] (unit, not centred) and centred [n, d] (the windows the
    centroids are compared with)}.

    E: the windows' embeddings as the encoder gives them (normalised here, like pushWindow). `speech` (per step,
    truthy = speech; oracle speech in validate.py): FileSpeakerMap.finish exactly (windows mostly speech clustered,
    speakers winning no speech step dropped, renumbered by first speech step); None: every window is clustered and
    nothing is dropped (clusterWindows + windowProbabilities + stepProbabilities alone)."""
    win = np.asarray(win, dtype=int)
    fc = file_clusters(num_steps, win, E, p, num_speakers, max_speakers, speech)
    E, chosen, Ea, K, assignment, cents = (fc[k] for k in ("E", "chosen", "Ea", "K", "assignment", "centroids"))
    M = whitening_matrix(p.whitening)
    Wall = whitened(E, M) if M is not None else None  # every window whitened once (the merge and the scores)
    if num_speakers is None and p.alike_merge is not None and M is not None and K > 1:
        cents = merge_alike(assignment, K, Wall[chosen], Ea[chosen], p.alike_merge)

    W = Wall if p.whitened_scores else None

    def probs_with(cs):
        if W is None or len(cs) == 0:
            P = window_probs(Ea, cs, p.temperature)
        else:
            P = window_probs(W, whitened_centroids(cs, Ea[chosen], W[chosen]), p.temperature)
        return step_probs(num_steps, win, P, p.hop_steps, max(1, len(cs)), True)

    if speech is not None and len(cents) > 1:
        lab = labels_of(probs_with(cents))
        first = {}
        for s in np.nonzero(np.asarray(speech).astype(bool)[:num_steps])[0]:
            first.setdefault(int(lab[s]), int(s))
        order = sorted(first, key=lambda k: first[k])
        if order:
            cents = cents[order]
    probs = probs_with(cents)
    return {"labels": labels_of(probs), "probs": probs, "K": max(1, len(cents)), "clustered": chosen, "centroids": cents,
            "embeddings": E, "centred": Ea}


# ------------------------------------------------------------------ 4. streams (OnlineSpeakers)
class Sparse:
    """A stream's sparse windows (sparse_windows; LiveSpeakerMap's 'sparse' outcomes), each scored against the speakers
    as they stand when it arrives, without joining or opening one: rows (at, plain unit row, compared unit row) in
    window order, `at` = the main windows before it; `probs` gets each one's vector [width] by its row index (none
    while there is no speaker)."""

    def __init__(self, rows=(), width: int = 0):
        self.rows, self.next, self.width, self.probs = list(rows), 0, width, {}

    def before(self, i: int, score) -> None:
        """Scores the rows due before main window i: score(plain, compared) -> (vector, the ids its entries go to) or None."""
        while self.next < len(self.rows) and self.rows[self.next][0] <= i:
            _, plain, compared = self.rows[self.next]
            got = score(plain, compared)
            if got is not None:
                v = np.zeros(self.width)
                for q, b in zip(*got):
                    v[b] += q
                self.probs[self.next] = v
            self.next += 1


def online_bar(p: Params, K: int) -> float:
    """OnlineSpeakers.bar: a window joins its closest of the K speakers at this cosine or above, else opens one."""
    return p.online_threshold - p.online_threshold_step * max(0, K - 1)


def online_assign(E: np.ndarray, p: Params, max_speakers: int | None = None,
                  confirm: int = 1, sparse: Sparse | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One pass over the embedded windows (unit rows): a window joins its closest speaker when their cosine reaches
    online_bar (the threshold, lowered by online_threshold_step per speaker beyond the first), else opens a new one.
    Returns (speaker of each window, P [n, max_speakers]).

    confirm > 1 is NOT the service (a variant tried, worse): a window below online_threshold opens a new speaker
    only when it is the `confirm`-th such window in a row (the new centroid is their sum); until then it joins the
    closest speaker without moving its centroid.
    `sparse`: its rows due before each window (and those due after the last) scored by the centroids as they stand."""
    maxk = p.max_speakers if max_speakers is None else max_speakers
    E = np.asarray(E, dtype=np.float64)
    sums: list[np.ndarray] = []
    C: list[np.ndarray] = []
    P = np.zeros((len(E), maxk))
    assigned = np.zeros(len(E), dtype=int)
    pending: list[np.ndarray] = []
    sparse = sparse or Sparse()
    now = lambda _plain, compared: (softmax([p.temperature * dot(compared, c) for c in C]), range(len(C))) if C else None
    for i, e in enumerate(E):
        sparse.before(i, now)
        K = len(C)
        v = dots(np.stack(C), e) if K else np.zeros(0)
        if K > 0 and (v.max() >= online_bar(p, K) or K >= maxk):
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
            C.append(normalise(e))
        assigned[i] = k
        P[i, :len(C)] = softmax([p.temperature * dot(e, c) for c in C])
    sparse.before(len(E), now)
    return assigned, P


def overlap_mapping(assign_past: np.ndarray, ids_past: np.ndarray, clusters: int, K: int) -> list[int]:
    """recluster.ts overlapMapping: cluster a -> speaker id, one-to-one, maximising the windows on which the new
    clustering agrees with the ids already given (the first best in lexicographic order of the id tuples)."""
    M = [[int(np.sum((assign_past == a) & (ids_past == b))) for b in range(K)] for a in range(clusters)]
    best, best_map = -1, list(range(clusters))

    def walk(a: int, used: list[bool], cur: list[int], score: int) -> None:
        nonlocal best, best_map
        if a == clusters:
            if score > best:
                best, best_map = score, list(cur)
            return
        for b in range(K):
            if not used[b]:
                used[b] = True
                cur.append(b)
                walk(a + 1, used, cur, score + M[a][b])
                cur.pop()
                used[b] = False

    walk(0, [False] * K, [], 0)
    return best_map


def recluster_assign(win, E: np.ndarray, p: Params, K: int, sparse: Sparse | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reclustering (recluster.ts), a stream told its count K: the first recluster_min_windows - 1 windows as
    OnlineSpeakers (cap K); from then on, every recluster_every windows, the last recluster_history windows (unit
    rows, window order) are centred on their mean and clustered for exactly K speakers (cluster_windows), the
    clusters mapped one-to-one onto the ids already given (overlap_mapping); each window takes the id of its nearest
    centroid and softmax(T x cosine) over the mapped ids. Returns (id of each window, P [n, K])."""
    E = np.asarray(E, dtype=np.float64)
    win = np.asarray(win, dtype=int)
    n = len(E)
    P = np.zeros((n, K))
    ids = np.zeros(n, dtype=int)
    warm = min(n, p.recluster_min_windows - 1)  # too few windows to cluster: OnlineSpeakers capped at K
    sparse = sparse or Sparse()
    ids[:warm], P[:warm] = online_assign(E[:warm], p, K, sparse=sparse)
    cur = None

    def now(_plain, compared):
        mapping, cents, mean = cur
        return softmax([p.temperature * float(x) for x in dots(cents, normalise(compared - mean))]), mapping
    for i in range(warm, n):
        e = E[i]
        if cur is not None:
            sparse.before(i, now)
        if cur is None or (i + 1 - p.recluster_min_windows) % p.recluster_every == 0:
            lo = max(0, i + 1 - p.recluster_history)
            mean = mean_rows(E[lo:i + 1])
            Ea = normalise(E[lo:i + 1] - mean)
            k_, assign, cents = cluster_windows(win[lo:i + 1], Ea, p, K, K)
            cur = (overlap_mapping(assign[:-1], ids[lo:i], k_, K), cents, mean)
        mapping, cents, mean = cur
        sims = dots(cents, normalise(e - mean))
        ids[i] = mapping[int(np.argmax(sims))]
        probs = softmax([p.temperature * float(x) for x in sims])
        for a, b in enumerate(mapping):
            P[i, b] = probs[a]
    if cur is not None:
        sparse.before(n, now)
    return ids, P


def free_clusters(win, E: np.ndarray, p: Params, max_speakers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """clusterFreely (free-clustering.ts): unit rows E clustered as a file clusters its windows without a count
    (centred on their mean when `center`, long clusters kept apart by the pair rule, speakers it calls one voice
    merged). Returns (centroids [K, d] over the compared rows, the compared rows, the mean taken away (zeros when
    not centred))."""
    mean = mean_rows(E) if p.center and len(E) else np.zeros(E.shape[1])
    Ea = normalise(E - mean) if p.center and len(E) else E
    V = second_view(E, p, None)
    K, assignment, cents = cluster_windows(win, Ea, p, max_speakers, None, V)
    M = whitening_matrix(p.whitening)
    if p.alike_merge is not None and M is not None and K > 1:
        cents = merge_alike(assignment, K, whitened(E, M), Ea, p.alike_merge)
    return cents, Ea, mean


def greedy_mapping(assign_past: np.ndarray, ids_past: np.ndarray, clusters: int, known: int, cap: int) -> list[int]:
    """free-recluster.ts greedyMapping: cluster -> id, one-to-one, the (cluster, id) pair agreeing on the most past
    windows first (ties: the lowest cluster, then the lowest id); clusters agreeing with no id left take new ids
    (known, known + 1, ...; never past cap - 1) in cluster order."""
    agree = np.zeros((clusters, max(known, 1)), dtype=np.int64)
    for a, b in zip(assign_past, ids_past):
        agree[int(a), int(b)] += 1
    out = [-1] * clusters
    while agree.size and agree.max() > 0:
        a, b = divmod(int(np.argmax(agree)), agree.shape[1])
        out[a] = b
        agree[a, :] = 0
        agree[:, b] = 0
    nxt = known
    for a in range(clusters):
        if out[a] < 0:
            out[a] = min(nxt, cap - 1)
            nxt += 1
    return out


def free_recluster_assign(win, E: np.ndarray, Ew: np.ndarray, p: Params, cap: int,
                          sparse: Sparse | None = None) -> tuple[np.ndarray, np.ndarray]:
    """FreeReclustering (free-recluster.ts), a stream without a count: the first free_recluster_min_windows - 1
    windows as OnlineSpeakers over the whitened rows Ew (cap); from then on, every free_recluster_every windows
    (recluster_every where 0), the last recluster_history windows (plain unit rows E) are clustered as a file's
    (free_clusters) and the clusters mapped onto the ids already given (greedy_mapping); each window takes the id of its nearest centroid (its row centred on
    the history's mean) and softmax(T x cosine) added onto the mapped ids. Returns (id of each window, P [n, cap])."""
    win = np.asarray(win, dtype=int)
    n = len(E)
    P = np.zeros((n, cap))
    ids = np.zeros(n, dtype=int)
    warm = min(n, p.free_recluster_min_windows - 1)
    sparse = sparse or Sparse()
    ids[:warm], P[:warm] = online_assign(Ew[:warm], p, cap, sparse=sparse)
    known = int(ids[:warm].max()) + 1 if warm else 0
    cur = None
    every = p.free_recluster_every or p.recluster_every

    def now(plain, _compared):
        mapping, cents, mean = cur
        sims = dots(cents, normalise(plain - mean) if p.center else plain)
        return softmax([p.temperature * float(x) for x in sims]), mapping
    for i in range(warm, n):
        if cur is not None:
            sparse.before(i, now)
        if cur is None or (i + 1 - p.free_recluster_min_windows) % every == 0:
            lo = max(0, i + 1 - p.recluster_history)
            cents, Ea, mean = free_clusters(win[lo:i + 1], E[lo:i + 1], p, cap)
            lab = np.array([int(np.argmax(dots(cents, e))) for e in Ea[:-1]], dtype=int)
            cur = (greedy_mapping(lab, ids[lo:i], len(cents), known, cap), cents, mean)
        mapping, cents, mean = cur
        e = normalise(E[i] - mean) if p.center else E[i]
        sims = dots(cents, e)
        ids[i] = mapping[int(np.argmax(sims))]
        known = max(known, int(ids[i]) + 1)
        for a, q in enumerate(softmax([p.temperature * float(x) for x in sims])):
            P[i, mapping[a]] += q
    if cur is not None:
        sparse.before(n, now)
    return ids, P


def provisional_probs(num_steps: int, win, P: np.ndarray, hop: int, width: int, ahead: int = 0) -> np.ndarray:
    """LiveSpeakerMap's provisional answers: step s takes the vector of the latest embedded window whose last step
    (jH + W - 1) is at or before s + `ahead` (provisional_lookahead_steps; 0: "who spoke last"); steps before the
    first take zeros (label 0). Returns probs [S, width] float32."""
    out = np.zeros((num_steps, width), dtype=np.float32)
    last = np.asarray(win, dtype=int) * hop + WINDOW_STEPS - 1
    k = -1
    for s in range(num_steps):
        while k + 1 < len(last) and last[k + 1] <= s + ahead:
            k += 1
        if k >= 0:
            out[s, :P.shape[1]] = P[k].astype(np.float32)
    return out


_WHITENING: dict[str, np.ndarray] = {}


def whitening_matrix(name: str) -> np.ndarray | None:
    """models/speakers/<name>'s "matrix" [d, d] (manifest.ts loadWhitening), None for ""."""
    if not name:
        return None
    if name not in _WHITENING:
        _WHITENING[name] = np.asarray(json.load(open(MANIFEST.parent / name))["matrix"], dtype=np.float64)
    return _WHITENING[name]


def whitened(E: np.ndarray, M: np.ndarray | None) -> np.ndarray:
    """whiten() of whitening.ts: each unit row e -> normalise(M e), every output a left-to-right sum.

    The sums run over the inputs i in order for all rows and outputs at once (acc[n, r] += E[n, i] M[r, i]): the
    same additions in the same order as one dots(M, e) per row, bit for bit, about 5x faster (the report spent
    most of its time here)."""
    if M is None or len(E) == 0:
        return E
    E = np.asarray(E, dtype=np.float64)
    acc = np.zeros((len(E), M.shape[0]))
    for i in range(M.shape[1]):
        acc += np.multiply.outer(E[:, i], M[:, i])
    return normalise(acc)


def stream_map(num_steps: int, win, E: np.ndarray, p: Params, max_speakers: int | None = None,
               confirm: int = 1, num_speakers: int | None = None, sparse_win=(), sparse_E: np.ndarray | None = None) -> dict:
    """Streams: {labels [S], probs [S, width] float32, K, assigned [n] (each window's speaker), provisional [S]}.
    Step s uses only windows starting at or before s; its provisional label only windows ending at or before
    s + provisional_lookahead_steps (provisional_probs). Each window is whitened first when `p.whitening` names
    a matrix (`whitened`; live-map.ts).
    With 2 <= num_speakers <= recluster_max_speakers: Reclustering (width num_speakers); without a count and with
    free_recluster_min_windows: FreeReclustering (free_recluster_assign); else OnlineSpeakers.
    `sparse_win`, `sparse_E` (sparse_windows and their embeddings): scored as they arrive without being assigned, they
    count in the steps they cover like the others (Sparse)."""
    maxk = p.max_speakers if max_speakers is None else max_speakers
    if num_speakers is not None:
        maxk = min(maxk, num_speakers)
    if len(win) == 0:
        probs = np.zeros((num_steps, maxk), dtype=np.float32)
        return {"labels": labels_of(probs), "probs": probs, "K": 1, "assigned": np.zeros(0, dtype=int), "provisional": labels_of(probs)}
    M = whitening_matrix(p.whitening)
    plain = normalise(np.asarray(E, dtype=np.float64))
    E = whitened(plain, M)
    win = np.asarray(win, dtype=int)
    xw = np.asarray(sparse_win, dtype=int)
    xplain = normalise(np.asarray(sparse_E, dtype=np.float64)) if len(xw) else np.zeros((0, plain.shape[1]))
    xcmp = whitened(xplain, M)
    sparse = Sparse([(int(np.searchsorted(win, j)), xplain[k], xcmp[k]) for k, j in enumerate(xw)], maxk)
    if num_speakers is not None and 2 <= num_speakers <= p.recluster_max_speakers:
        assigned, P = recluster_assign(win, E, p, num_speakers, sparse)
    elif num_speakers is None and p.free_recluster_min_windows > 0 and confirm == 1:
        assigned, P = free_recluster_assign(win, plain, E, p, maxk, sparse)
    else:
        assigned, P = online_assign(E, p, maxk, confirm, sparse)
    if sparse.probs:  # the scored sparse windows among the others, in window order
        order = sorted([(int(j), i, False) for i, j in enumerate(win)] + [(int(xw[k]), k, True) for k in sparse.probs])
        win = np.array([j for j, _, _ in order], dtype=int)
        P = np.stack([sparse.probs[i] if is_sparse else P[i] for _, i, is_sparse in order])
    probs = step_probs(num_steps, win, P, p.hop_steps, maxk, False)
    return {"labels": labels_of(probs), "probs": probs, "K": int(assigned.max()) + 1, "assigned": assigned,
            "provisional": labels_of(provisional_probs(num_steps, win, P, p.hop_steps, maxk, p.provisional_lookahead_steps))}


def run(levels: np.ndarray, embed, p: Params, num_speakers: int | None = None, speech=None) -> tuple[dict, dict]:
    """Files and streams from step levels and embed(window index) -> 256-d (or a dict window -> vector)."""
    get = embed.__getitem__ if isinstance(embed, dict) else embed

    def embedded(js) -> np.ndarray:
        return np.stack([np.asarray(get(int(j)), dtype=np.float64) for j in js]) if len(js) else np.zeros((0, 256))

    S = len(levels)
    win = embedded_windows(levels, p)  # a stream's
    fw = win if p.file_speech_gate is None else embedded_windows(levels, p, speech, p.file_speech_gate)  # a file job's
    xw = sparse_windows(levels, p)
    X = embedded(xw) if len(xw) else None
    E = embedded(win)
    FE = E if fw is win else embedded(fw)
    return file_map(S, fw, FE, p, num_speakers, speech=speech), stream_map(S, win, E, p, sparse_win=xw, sparse_E=X)
