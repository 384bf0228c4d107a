"""The speaker map's whitening (streams: speakers 1.4.0; files' merge of alike speakers: 1.5.0): a linear map of
CAM++ embeddings that shrinks the directions in which one voice moves (emotion, channel, words, room), learnt from
labelled voices of corpora the speaker map neither tunes on nor is scored on.

Streams compare whitened windows: a file job takes the recording's mean embedding away before clustering
(file-map.ts `centred`), which removes what the voices of one recording share; a stream cannot (its mean moves while
the first speakers are already fixed: models/speakers/MODEL_CARD.md). Within-class covariance normalisation (WCCN)
learnt from many voices is a fixed stand-in: cosines after it weigh the directions that tell voices apart. Files cluster
centred windows (whitening them gained nothing on the tuning corpora), then merge the speakers whose centroids of the
whitened, uncentred windows are alike (cluster.merge_alike): a second view that joins the halves of a split voice.

Pool (never DEV or TEST of simulate.py): the CAM++ windows of baved, audiomnist_az and fsdd in the encoder heads'
cache (training/runs/encoders/gender.pkl, each clip clean and through a telephone codec), plus emospeech's identified
users (RakshakTeam/emospeech-dataset-v1 @ 85b1ef55, command words in real places; up to 6 clips per user and emotion).
The shrinkage `alpha` (Sw <- (1 - alpha) Sw + alpha * mean eigenvalue * I) is chosen by the equal error rate of
same/different-voice window pairs on held-out halves of the pool's own voices, not on any conversation.

  python -m training diarization whitening     # ~3 min: models/speakers/whitening.json (+ its EER table)
"""
from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
GENDER_CACHE = ROOT / "training/runs/encoders/gender.pkl"
POOL_CACHE = ROOT / "training/runs/diarization/whitening_pool.pkl"
OUT = ROOT / "models/speakers/whitening.json"
ENCODER = ROOT / "models/encoders/campplus/encoder.onnx"
CACHE_SOURCES = ("baved", "audiomnist_az", "fsdd")
ALPHAS = (0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 0.9)
WINDOW = 25600  # the encoder's 1.6 s


def _unit(X: np.ndarray) -> np.ndarray:
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def cache_pool() -> tuple[np.ndarray, np.ndarray]:
    """The CAM++ windows (emb_campplus) of CACHE_SOURCES in the heads' cache, labelled by voice."""
    recs = pickle.load(open(GENDER_CACHE, "rb"))["records"]
    X, y = [], []
    for r in recs:
        if r["source"] in CACHE_SOURCES:
            for e in r["emb_campplus"]:
                X.append(e)
                y.append(r["speaker"])
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def _windows(x: np.ndarray) -> list[np.ndarray]:
    """A clip's 1.6 s windows every 0.8 s over its voiced part; a shorter clip: one window centred on its energy."""
    if len(x) <= WINDOW:
        c = int(np.argmax(np.convolve(x ** 2, np.ones(1600), "same")))
        seg = x[max(0, c - WINDOW // 2):max(0, c - WINDOW // 2) + WINDOW]
        y = np.zeros(WINDOW, dtype=np.float32)
        y[:len(seg)] = seg
        return [y]
    return [x[s:s + WINDOW].astype(np.float32) for s in range(0, len(x) - WINDOW + 1, WINDOW // 2)
            if 10 * np.log10(np.mean(x[s:s + WINDOW] ** 2) + 1e-12) > -45]


def emospeech_pool() -> tuple[np.ndarray, np.ndarray]:
    """emospeech's identified users, embedded by the shipped encoder (cached in POOL_CACHE)."""
    if POOL_CACHE.exists():
        d = pickle.load(open(POOL_CACHE, "rb"))
        return d["X"], d["y"]
    from training.encoders import embed_affect as EA
    sess = EA.session(str(ENCODER))
    X, y = [], []
    for c in EA.emospeech(per_speaker_label=6):
        ws = _windows(EA.load_clip(c))
        if not ws:
            continue
        E = EA.campplus_embeddings(sess, np.stack(ws))
        X += list(E)
        y += [c.speaker] * len(E)
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    POOL_CACHE.parent.mkdir(parents=True, exist_ok=True)
    pickle.dump({"X": X, "y": y}, open(POOL_CACHE, "wb"))
    return X, y


def wccn(X: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """(Sw_shrunk)^(-1/2) of unit rows X labelled y: Sw the covariance of each voice's windows around their mean."""
    d = X.shape[1]
    R = np.concatenate([X[y == s] - X[y == s].mean(0) for s in np.unique(y) if (y == s).sum() >= 2])
    Sw = R.T @ R / len(R)
    Sw = (1 - alpha) * Sw + alpha * np.trace(Sw) / d * np.eye(d)
    w, U = np.linalg.eigh(Sw)
    return U @ np.diag(w ** -0.5) @ U.T


def eer(scores: np.ndarray, same: np.ndarray) -> float:
    s1, s0 = scores[same], scores[~same]
    best = 1.0
    for t in np.quantile(scores, np.linspace(0, 1, 2001)):
        best = min(best, max(float((s1 < t).mean()), float((s0 >= t).mean())))
    return best


def held_out_eer(X: np.ndarray, y: np.ndarray, alpha: float | None, repeats: int = 4, seed: int = 0) -> float:
    """Mean EER of window pairs of unseen voices: fitted on one random half of the voices, scored on the other (both
    ways, `repeats` splits); each half's windows centred on their mean, as a file's are. alpha None: no whitening."""
    voices = np.unique(y)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(repeats):
        half = set(rng.permutation(voices)[:len(voices) // 2])
        fit = np.array([v in half for v in y])
        for f in (fit, ~fit):
            Z = X[~f] @ (wccn(X[f], y[f], alpha) if alpha is not None else np.eye(X.shape[1]))
            Z = _unit(_unit(Z) - _unit(Z).mean(0))
            iu = np.triu_indices(len(Z), 1)
            out.append(eer((Z @ Z.T)[iu], (y[~f][:, None] == y[~f][None, :])[iu]))
    return float(np.mean(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()
    X1, y1 = cache_pool()
    X2, y2 = emospeech_pool()
    X, y = _unit(np.concatenate([X1, X2])), np.concatenate([y1, y2])
    print(f"pool: {len(X)} windows of {len(np.unique(y))} voices")
    table = {"none": held_out_eer(X, y, None)}
    for al in ALPHAS:
        table[str(al)] = held_out_eer(X, y, al)
        print(f"alpha {al}: held-out EER {table[str(al)]:.4f} (none {table['none']:.4f})")
    alpha = min(ALPHAS, key=lambda al: table[str(al)])
    M = wccn(X, y, alpha)
    doc = {"what": "the speaker map's whitening of CAM++ embeddings (streams compare, files merge alike speakers): "
                   "whitened = normalise(matrix x unit embedding)",
           "made_by": "python -m training diarization whitening",
           "pool": {"windows": int(len(X)), "voices": int(len(np.unique(y))),
                    "sources": list(CACHE_SOURCES) + ["emospeech (RakshakTeam/emospeech-dataset-v1 @ 85b1ef55, identified users)"]},
           "alpha": alpha, "held_out_eer": {k: round(v, 4) for k, v in table.items()},
           "dim": int(M.shape[0]), "matrix": [[float(f"{v:.6g}") for v in row] for row in M]}
    Path(a.out).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"alpha {alpha}: wrote {a.out}")


if __name__ == "__main__":
    main()
