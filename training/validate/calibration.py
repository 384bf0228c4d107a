"""How far a model's confidence can be trusted on recordings it never heard, and the temperature that makes it honest.

    python -m training.validate.calibration [--tasks arousal,emotions]   # the table (each unheard corpus at a T fitted without it)
    python -m training.validate.calibration --write                # models/<task>/calibration.json, read by the service

A step's confidence is the winning class's probability. Trained on acted corpora, arousal 1.0.1 says `neutral` with
0.8-0.9 on a short angry word and is about as sure on whole utterances of corpora it never heard, where it is right on
a third to two fifths of the speech steps (models/arousal/calibration.json). The service shows instead the winning probability
after a temperature T: softmax(log p / T) (src/analysis/postprocess.ts). The label is unchanged (the same argmax),
and so are `raw` (the network's own averaged probabilities), the summary fractions and the transitions' labels; a
confidence and a segment's confidence come from the tempered probabilities.

Data: the clips of `training/encoders/embed_affect.py` `sample()` and `emospeech()` (its git snapshot, fetched
under /work/.mirror or $AURIS_MIRRORS) from the corpora the network never heard (`UNHEARD`), each whole and as a
0.5-1.2 s crop (`short_crop`, the short-utterance slice): the shipped network's per-step probabilities over every
voiced step (>= -50 dBFS; the clip's label on each). T is fitted by the mean negative log-likelihood, every corpus
weighing the same, and each unheard corpus is scored at a T fitted without it (arousal: on the other unheard corpora;
emotions, which heard every corpus of clips.csv: on their held-out speakers) by the expected calibration error (15
bins of confidence: the gap between the confidence and how often the label is right, weighted by the bin's share).
`--write` fits T on all of them and records it with the table.
"""
from __future__ import annotations

import argparse
import json
from multiprocessing import Pool
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CLASSES = {"arousal": ["high", "low", "neutral"], "emotions": ["happy", "irritated", "neutral", "tired"]}
# Scored: corpora the shipped network never heard (its card). arousal 1.0.1 never heard five corpora, so T is fitted
# on four and scored on the fifth, each in turn. emotions 1.1.0 heard the training speakers of every corpus of
# clips.csv, so its T is fitted on their held-out speakers (data/speakers.py split "val") and scored on emospeech,
# the one corpus it never heard (its labels have no `tired`).
UNHEARD = {"arousal": ("ased", "emospeech", "ettsdb", "nemo", "urdu"), "emotions": ("emospeech",)}
FIT_HELD_OUT_SPEAKERS = {"emotions": "held-out speakers"}
GATE_DB = -50.0
BINS = 15
SEED = 11


def _work(args) -> list[dict]:
    task, part, seed = args
    import onnxruntime as ort
    from training.encoders import embed_affect as EA
    from training.encoders import windows
    from training.features import logmel_fast
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    net = ort.InferenceSession(str(ROOT / "models" / task / "model.onnx"), so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    out = []
    for c, group in part:
        x = EA.load_clip(c)
        label = EA.labels_of(c)[0 if task == "arousal" else 1]
        for kind, sig in (("whole", x), ("short", EA.short_crop(x, windows.step_levels(x), rng))):
            levels = windows.step_levels(sig)
            probs = net.run(None, {"features": logmel_fast(sig)[None].astype(np.float32)})[0][0][: len(levels)]
            voiced = levels[: len(probs)] >= GATE_DB
            out.append({"source": group, "short": kind == "short", "y": CLASSES[task].index(label), "probs": probs[voiced].astype(np.float32)})
    return out


def clips_of(task: str) -> list[tuple]:
    """(clip, group): the clips of embed_affect's samples (clips.csv and the emospeech snapshot) the task scores or
    fits on; group = the corpus, or FIT_HELD_OUT_SPEAKERS[task] for the held-out speakers of corpora it heard."""
    from training.data import speakers as S
    from training.encoders import embed_affect as EA
    i = 0 if task == "arousal" else 1
    out = []
    for c in EA.sample() + EA.emospeech():
        if EA.labels_of(c)[i] not in CLASSES[task]:
            continue
        if c.source in UNHEARD[task]:
            out.append((c, c.source))
        elif task in FIT_HELD_OUT_SPEAKERS and not isinstance(c, EA.MirrorClip) and S.split(c) == "val":
            out.append((c, FIT_HELD_OUT_SPEAKERS[task]))
    return out


def steps_of(task: str, workers: int = 2) -> list[dict]:
    """One record per clip version: its group, whether it is the short crop, its label, its voiced steps' probabilities."""
    clips = clips_of(task)
    chunks = [clips[i:i + 40] for i in range(0, len(clips), 40)]
    recs: list[dict] = []
    with Pool(workers) as pool:
        for part in pool.imap(_work, [(task, c, SEED + j) for j, c in enumerate(chunks)]):
            recs += part
    return recs


def tempered(probs: np.ndarray, t: float) -> np.ndarray:
    """softmax(log p / t), row by row (postprocess.ts temperedProbability does the same for the winning class)."""
    z = np.log(np.clip(probs.astype(np.float64), 1e-12, 1.0)) / t
    z -= z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def _pool(recs: list[dict], short: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    rs = [r for r in recs if short is None or r["short"] == short]
    if not rs:
        return np.zeros((0, 1)), np.zeros(0, int)
    return np.concatenate([r["probs"] for r in rs]), np.concatenate([np.full(len(r["probs"]), r["y"]) for r in rs])


def nll(probs: np.ndarray, y: np.ndarray, t: float) -> float:
    return float(-np.mean(np.log(tempered(probs, t)[np.arange(len(y)), y] + 1e-12)))


def calibration(probs: np.ndarray, y: np.ndarray, t: float) -> dict:
    """Expected calibration error, mean confidence and accuracy of the winning class, the share at >= 0.8 and how often
    those are right."""
    p = tempered(probs, t)
    conf, ok = p.max(1), p.argmax(1) == y
    bins = np.minimum(BINS - 1, (conf * BINS).astype(int))
    ece = sum(float((bins == b).mean() * abs(conf[bins == b].mean() - ok[bins == b].mean())) for b in range(BINS) if (bins == b).any())
    hi = conf >= 0.8
    return {"steps": int(len(y)), "ece": round(ece, 4), "confidence": round(float(conf.mean()), 4), "accuracy": round(float(ok.mean()), 4),
            "share_at_0.8": round(float(hi.mean()), 4), "right_at_0.8": round(float(ok[hi].mean()), 4) if hi.any() else None}


def fit(by_corpus: dict[str, list[dict]]) -> float:
    """The temperature of the least mean NLL, every corpus weighing the same (golden-section search on log T)."""
    pooled = [_pool(rs) for rs in by_corpus.values()]
    f = lambda lt: float(np.mean([nll(p, y, float(np.exp(lt))) for p, y in pooled]))
    a, b = np.log(0.5), np.log(30.0)
    g = (np.sqrt(5) - 1) / 2
    for _ in range(60):
        c, d = b - g * (b - a), a + g * (b - a)
        if f(c) < f(d):
            b = d
        else:
            a = c
    return round(float(np.exp((a + b) / 2)), 2)


def report(task: str, recs: list[dict]) -> dict:
    """Each unheard corpus scored at a T fitted without it: on the other unheard corpora, or on the held-out speakers
    of the corpora the model heard (FIT_HELD_OUT_SPEAKERS). The shipped T is fitted on every group."""
    by = {s: [r for r in recs if r["source"] == s] for s in sorted({r["source"] for r in recs})}
    slices = (("all", None), ("short", True), ("whole", False))
    rows = {}
    for held in UNHEARD[task]:
        t = fit({s: rs for s, rs in by.items() if s != held})
        rows[held] = {"temperature": t, **{f"{name} {slice_}": calibration(*_pool(by[held], sh), tt)
                                            for slice_, sh in slices for name, tt in (("as trained", 1.0), ("tempered", t))}}
    mean = {k: round(float(np.mean([rows[c][k]["ece"] for c in rows])), 4) for k in rows[next(iter(rows))] if k != "temperature"}
    shipped = fit(by)
    scored = [r for r in recs if r["source"] in UNHEARD[task]]
    version = json.loads((ROOT / "models" / task / "manifest.json").read_text())["version"]
    return {"task": task, "version": version, "corpora": list(UNHEARD[task]), "fitted_on": list(by),
            "command": "python -m training.validate.calibration --write",
            "shipped": {"temperature": shipped}, "leave_one_corpus_out": rows, "mean_ece": mean,
            "all_corpora": {f"{name} {slice_}": calibration(*_pool(scored, sh), tt) for slice_, sh in slices
                            for name, tt in (("as trained", 1.0), ("tempered", shipped))}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(CLASSES))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="models/<task>/calibration.json (the service reads `shipped`)")
    a = ap.parse_args()
    for task in a.tasks.split(","):
        rep = report(task, steps_of(task, a.workers))
        for c, row in rep["leave_one_corpus_out"].items():
            print(f"{task} {c}: T {row['temperature']}, ECE {row['as trained all']['ece']:.3f} -> {row['tempered all']['ece']:.3f} "
                  f"(short {row['as trained short']['ece']:.3f} -> {row['tempered short']['ece']:.3f})")
        print(f"{task}: mean ECE {rep['mean_ece']}; shipped T {rep['shipped']['temperature']}")
        if a.write:
            out = ROOT / "models" / task / "calibration.json"
            out.write_text(json.dumps(rep, indent=1) + "\n")
            print(f"wrote {out}")


if __name__ == "__main__":
    main()
