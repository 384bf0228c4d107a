"""Files' alike merge (speakers 1.6.0): a logistic rule on pairs of found speakers, fitted on the DEV conversations.

After clustering a file without a count, two of its speakers are merged when the rule's probability that they are one
voice reaches `min_probability` (cluster.merge_alike, src/speakers/alike-merge.ts). 1.5.0 merged on one feature, the
cosine of the speakers' whitened centroids, at a bar of 0.73; the rule adds the cosine of their centred centroids (the
view they were clustered in) and their sizes (the larger the two, the more alike they must be: a split-off half is
usually small; the ratio of the sizes alone does not help, the model card).

Pairs: every pair of speakers `cluster.file_clusters` finds in a DEV conversation (the manifest's parameters, oracle
speech), labelled "one voice" when the reference voice speaking most of the first's windows also speaks most of the
second's. The tuning conversations last 1-2.5 minutes, so a speaker's windows count up to the most any speaker there
had (`max_windows`): in an hour-long file the sizes stay where the rule was fitted, and only the most alike pairs
merge. The weights: L2-penalised logistic regression (C = 10 on the weights, not on the bias: scikit-learn's
LogisticRegression(C=10) objective) by Newton's method. `min_probability`: the DEV objective's best on a 0.05 grid.
`keep_apart_below` (speakers 1.7.0): the same rule inside the clustering, where two long clusters whose probability of
one voice is under it are not merged (cluster.Clusterer.apart); the DEV objective's best on a 0.1 grid, with the rule
and min_probability as chosen without it. Then `whitened_scores` (speakers 1.7.0, a manifest key beside
`alike_merge`): whether windows scored in the whitened view beat the clustered view with all of the above. Last,
`short_speaker_min_s` and `short_speaker_below` (speakers 1.9.2): a cluster too short to be a speaker (under
`min_speaker_s`) but of at least short_speaker_min_s whose probability of one voice with every speaker is under
short_speaker_below is a speaker too (cluster.Clusterer.distinct_short); the DEV objective's best on SHORT_SPEAKER, or
none.
The clustering's own `merge_threshold` and `min_speaker_s` stay the manifest's (chosen by `tune` without the merge):
`--with-clustering` re-chooses them with the rule (CLUSTERING_GRID, the rule refitted at each point since the pairs
it sees change), which won on DEV (objective 0.0859 against 0.1037) and lost held out (the model card): not kept.

  python -m training diarization tune-merge   # ~12 min -> training/runs/diarization/merge_tuning.json (copy
                                               # "alike_merge" and "whitened_scores" into models/speakers/manifest.json
                                               # "speaker_map")
  python -m training diarization tune-merge --with-clustering   # ~17 min on 2 cores
"""
from __future__ import annotations

import itertools
import multiprocessing
from dataclasses import replace

import numpy as np

from training.diarization import cluster as C
from training.diarization import simulate as S
from training.diarization import validate as V

PENALTY_C = 10.0
MIN_PROBABILITIES = [round(0.2 + 0.05 * i, 2) for i in range(13)]  # 0.2 .. 0.8
KEEP_APART_BELOW = [round(0.1 * i, 1) for i in range(1, 8)]  # 0.1 .. 0.7
# speakers 1.9.2: short clusters the rule calls another voice than every speaker are speakers too (cluster.py
# Clusterer.distinct_short): (short_speaker_min_s, short_speaker_below)
SHORT_SPEAKER = [(s, q) for s in (1.5, 2.0, 3.0) for q in (0.02, 0.05, 0.1, 0.2)]


def window_voices(rec: dict, win, hop: int) -> np.ndarray:
    """The reference voice (index into the sorted voice names) speaking most of each window's steps; -1: none."""
    steps = len(rec["levels"])
    names = sorted({t[0] for t in rec["turns"]})
    cover = np.zeros((len(names), steps), dtype=int)  # steps each voice speaks (overlaps: both)
    for spk, a, b in rec["turns"]:
        cover[names.index(spk), int(a / C.STEP_S):min(steps, int(b / C.STEP_S) + 1)] = 1
    out = np.full(len(win), -1)
    for i, j in enumerate(win):
        per = cover[:, j * hop:j * hop + C.WINDOW_STEPS].sum(1)
        if per.max() > 0:
            out[i] = int(np.argmax(per))
    return out


def pairs(recs, p: C.Params) -> tuple[np.ndarray, np.ndarray, int]:
    """X [pairs, len(PAIR_FEATURES)], y [pairs] (1: one voice) over the recordings, and the largest speaker's windows
    among them (the sizes' cap: the rule is not extrapolated to longer files). The clustering runs without any rule
    (no keep_apart_below: the pairs the rule was fitted on in 1.6.0)."""
    M = C.whitening_matrix(p.whitening)
    p = replace(p, alike_merge=None)
    X, y, largest = [], [], 1
    for rec in recs:
        win, E = V.windows(rec, p)
        if not len(win):
            continue
        fc = C.file_clusters(len(rec["levels"]), win, E, p, speech=rec["speech"])
        if fc["K"] < 2:
            continue
        chosen = fc["chosen"]
        largest = max(largest, int(np.bincount(fc["assignment"]).max()))
        members, features = C.pair_features(fc["assignment"], fc["K"], C.whitened(fc["E"][chosen], M), fc["Ea"][chosen],
                                            len(chosen))
        voice = window_voices(rec, win[chosen], p.hop_steps)
        major = [np.bincount(voice[m][voice[m] >= 0]).argmax() if (voice[m] >= 0).any() else -1 for m in members]
        for (a, b), f in features.items():
            X.append(f)
            y.append(int(major[a] == major[b] >= 0))
    return np.array(X, dtype=np.float64), np.array(y, dtype=np.float64), largest


def fit_logistic(X: np.ndarray, y: np.ndarray, c: float = PENALTY_C, iterations: int = 100) -> tuple[float, np.ndarray]:
    """(bias, weights) minimising c x sum of log losses + |weights|^2 / 2, by Newton's method."""
    A = np.hstack([np.ones((len(X), 1)), X])
    theta = np.zeros(A.shape[1])
    ridge = np.eye(A.shape[1]) / c
    ridge[0, 0] = 0.0  # the bias is not penalised
    for _ in range(iterations):
        q = 1.0 / (1.0 + np.exp(-(A @ theta)))
        grad = A.T @ (q - y) + ridge @ theta
        hess = (A * (q * (1 - q))[:, None]).T @ A + ridge
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-12:
            break
    return float(theta[0]), theta[1:]


def rule_of(bias: float, weights, min_probability: float, max_windows: int) -> dict:
    return {"bias": bias, **{n: float(w) for n, w in zip(C.PAIR_FEATURES, weights)}, "min_probability": min_probability,
            "max_windows": max_windows}


# the clustering's own thresholds re-chosen with the merge on (it joins what they leave split)
CLUSTERING_GRID = {"merge_threshold": [0.15, 0.25, 0.3], "min_speaker_s": [4.0, 5.0]}
_RECS: list = []  # the tuning recordings, shared with the worker processes by fork


def tune_rule(p: C.Params) -> dict:
    """For `p`'s clustering: the rule fitted on _RECS' pairs, min_probability chosen by validate.py's objective (ties:
    the higher), then keep_apart_below, then whitened_scores (each with the earlier choices; the first two with windows
    scored in the clustered view, as they were chosen); also scores no merge."""
    X, y, largest = pairs(_RECS, p)
    bias, w = fit_logistic(X, y)

    def score(rule, whitened_scores=False):
        q = replace(p, alike_merge=rule, whitened_scores=whitened_scores)
        return V.objective(V.evaluate(_RECS, q, online=False))
    scores = {"none": score(None)}
    for q in MIN_PROBABILITIES:
        scores[q] = score(rule_of(bias, w, q, largest))
    best = min(MIN_PROBABILITIES, key=lambda q: (scores[q], -q))
    rule = rule_of(bias, w, best, largest)
    apart = {"none": scores[best]}
    for q in KEEP_APART_BELOW:
        apart[q] = score({**rule, "keep_apart_below": q})
    best_apart = min(KEEP_APART_BELOW, key=lambda q: (apart[q], -q))
    if apart[best_apart] < apart["none"]:
        rule["keep_apart_below"] = best_apart
    views = {False: min(apart.values()), True: score(rule, True)}
    whitened_scores = views[True] < views[False]
    short = {None: views[whitened_scores]}
    if "keep_apart_below" in rule:  # the short speakers are read with the keep-apart's sides
        for s, q in SHORT_SPEAKER:
            short[(s, q)] = score({**rule, "short_speaker_min_s": s, "short_speaker_below": q}, whitened_scores)
    best_short = min(short, key=lambda k: short[k])  # ties: none, then the grid's order
    if best_short is not None:
        rule.update(short_speaker_min_s=best_short[0], short_speaker_below=best_short[1])
    return {"merge_threshold": p.merge_threshold, "min_speaker_s": p.min_speaker_s,
            "alike_merge": rule, "whitened_scores": whitened_scores, "objective": short[best_short],
            "short_speaker_scores": {("none" if k is None else f"{k[0]}:{k[1]}"): v for k, v in short.items()},
            "pairs": len(y), "one_voice": int(y.sum()), "scores": {str(k): v for k, v in scores.items()},
            "keep_apart_scores": {str(k): v for k, v in apart.items()},
            "whitened_scores_objective": {str(k): v for k, v in views.items()}}


def tune(recs, p: C.Params, log=print, with_clustering: bool = False, workers: int = 2) -> dict:
    """tune_rule at `p`'s clustering, or (with_clustering) at each CLUSTERING_GRID point in `workers` processes; the
    lowest objective wins (ties: the first)."""
    global _RECS
    _RECS = recs
    grid = [replace(p, merge_threshold=mt, min_speaker_s=ms)
            for mt, ms in itertools.product(CLUSTERING_GRID["merge_threshold"], CLUSTERING_GRID["min_speaker_s"])] \
        if with_clustering else [p]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        results = pool.map(tune_rule, grid)
    for r in results:
        w = r["alike_merge"]
        log(f"  merge_threshold {r['merge_threshold']}, min_speaker_s {r['min_speaker_s']}: {r['pairs']} pairs "
            f"({r['one_voice']} one voice), no merge {r['scores']['none']:.4f}, min_probability {w['min_probability']} "
            f"{r['keep_apart_scores']['none']:.4f}, keep_apart_below {w.get('keep_apart_below')} "
            f"{r['whitened_scores_objective']['False']:.4f}, whitened_scores {r['whitened_scores']} "
            f"{r['short_speaker_scores']['none']:.4f}, short_speaker {w.get('short_speaker_min_s')} s / "
            f"{w.get('short_speaker_below')} {r['objective']:.4f}; "
            + ", ".join(f"{k} {w[k]:.4f}" for k in ("bias", *C.PAIR_FEATURES)))
    best = min(results, key=lambda r: r["objective"])
    return {**best, "grid": results}


def main() -> None:
    """`python -m training diarization tune-merge [--subsample K] [--with-clustering] [--runs DIR]` (its own command:
    validate.py's would import this module, which imports validate.py)."""
    import argparse
    import json
    from pathlib import Path
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subsample", type=int, default=1, help="tune on every k-th DEV conversation")
    ap.add_argument("--with-clustering", action="store_true",
                    help="re-choose merge_threshold and min_speaker_s with the rule (not kept: the module doc)")
    ap.add_argument("--runs", default=None, help="the folder with cache/ (default training/runs/diarization)")
    a = ap.parse_args()
    if a.runs:
        V.RUNS = Path(a.runs)
    res = tune(V.load(S.DEV)[:: a.subsample], C.Params.from_manifest(), with_clustering=a.with_clustering)
    (V.RUNS / "merge_tuning.json").write_text(json.dumps(res, indent=1))
    print(f"merge_threshold {res['merge_threshold']}, min_speaker_s {res['min_speaker_s']}, "
          f"alike_merge {json.dumps(res['alike_merge'])}, whitened_scores {json.dumps(res['whitened_scores'])}: "
          f"objective {res['objective']:.4f}")


if __name__ == "__main__":
    main()
