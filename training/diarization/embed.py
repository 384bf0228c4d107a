"""Simulates every planned conversation once and caches what the speaker map needs: step levels
(training.features.step_levels, the service framer's) and the speaker map's encoder's embedding
(models/encoders/<the speakers manifest's "encoder">/encoder.onnx, onnxruntime, 1 thread) of every window starting on a multiple of 6 or
of 25 steps (hop_steps 6 and 12 subsample the first, 25 the second) with at least one step >= -50 dBFS.
The held-out conversations with index 0 are also written as WAV + reference JSON for the end-to-end run.

  nice -n 10 python -m training.diarization.embed     # ~1.3 h on one core with CAM++ -> training/runs/diarization/cache/
  python -m training.diarization.embed --encoder campplus_int8 --out DIR   # another encoder's cache (report --runs DIR)
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import time
from pathlib import Path

import numpy as np

from training.diarization import simulate as S
from training.features import step_levels

ROOT = Path(__file__).resolve().parents[2]
RUNS = S.RUNS  # $AURIS_DIARIZATION_RUNS, as every other diarization step reads it
HOP_BASES = (6, 25)
WINDOW = 25
STEP = 1024


def session(name: str | None = None):
    """The speaker map's encoder, as the speakers manifest names it, or the one of models/encoders/<name>/."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    name = name or json.load(open(ROOT / "models/speakers/manifest.json"))["encoder"]
    return ort.InferenceSession(str(ROOT / "models/encoders" / name / "encoder.onnx"), so, providers=["CPUExecutionProvider"])


def window_starts(num_steps: int) -> np.ndarray:
    return np.array(sorted(set(range(0, num_steps, HOP_BASES[0])) | set(range(0, num_steps, HOP_BASES[1]))), int)


def embed_conversation(sess, y: np.ndarray, levels: np.ndarray, gate_db: float = -50.0) -> tuple[np.ndarray, np.ndarray]:
    """(window start steps, embeddings float32 [n, 256]) for the windows with >= 1 voiced step."""
    S_ = levels.size
    voiced = levels >= gate_db
    starts = [s for s in window_starts(S_) if voiced[s:s + WINDOW].any()]
    pcm = np.zeros((len(starts), WINDOW * STEP), np.float32)
    for i, s in enumerate(starts):
        seg = y[s * STEP:(s + WINDOW) * STEP]
        pcm[i, :seg.size] = seg
    out = [sess.run(None, {"pcm": pcm[i:i + 32]})[0] for i in range(0, len(starts), 32)]
    E = np.concatenate(out) if out else np.zeros((0, sess.get_outputs()[0].shape[-1]), np.float32)
    return np.array(starts, int), E.astype(np.float32)


def export_wav(path: Path, y: np.ndarray, turns, meta: dict) -> None:
    import soundfile as sf
    sf.write(str(path.with_suffix(".wav")), y, S.SR, subtype="PCM_16")
    ref = {"speakers": meta["speakers"], "condition": meta["condition"], "corpus": meta["corpus"], "key": meta["key"],
           "turns": [{"speaker": s, "start": round(a, 3), "end": round(b, 3)} for s, a, b in turns]}
    for k in ("codec", "snr_db"):
        if k in meta:
            ref[k] = meta[k]
    path.with_suffix(".json").write_text(json.dumps(ref, indent=1))


def is_exported(c: S.Conversation) -> bool:
    return c.corpus in S.TEST and c.index == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default=",".join(S.CORPORA))
    ap.add_argument("--out", default=str(RUNS))
    ap.add_argument("--encoder", default=None, help="models/encoders/<name> (default: the speakers manifest's)")
    a = ap.parse_args()
    out = Path(a.out)
    (out / "cache").mkdir(parents=True, exist_ok=True)
    (out / "conversations").mkdir(parents=True, exist_ok=True)
    sess = session(a.encoder)
    index = []
    for corpus in a.corpora.split(","):
        for cond in S.CONDITIONS:
            path = out / "cache" / f"{corpus}-{cond}.pkl"
            if path.exists():
                recs = pickle.load(open(path, "rb"))
            else:
                recs = []
                t0 = time.time()
                for c in S.plan((corpus,), (cond,)):
                    y, turns, meta = S.simulate(c)
                    levels = step_levels(y).astype(np.float32)
                    starts, E = embed_conversation(sess, y, levels)
                    recs.append({"meta": meta, "turns": turns, "levels": levels, "starts": starts, "emb": E,
                                 "seconds": y.size / S.SR})
                    if is_exported(c):
                        export_wav(out / "conversations" / c.key, y, turns, meta)
                pickle.dump(recs, open(path, "wb"))
                aud = sum(r["seconds"] for r in recs)
                print(f"{corpus}-{cond}: {len(recs)} conversations, {aud:.0f} s audio, "
                      f"{sum(len(r['starts']) for r in recs)} windows, {time.time() - t0:.0f} s", flush=True)
            for r in recs:
                if is_exported(S.Conversation(corpus, cond, r["meta"]["speakers"], r["meta"]["index"])):
                    index.append({"file": r["meta"]["key"] + ".wav", "reference": r["meta"]["key"] + ".json",
                                  "corpus": corpus, "condition": cond, "speakers": r["meta"]["speakers"],
                                  "seconds": round(r["seconds"], 2)})
    (out / "conversations" / "index.json").write_text(json.dumps(index, indent=1))


if __name__ == "__main__":
    main()
