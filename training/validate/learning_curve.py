"""Learning curves of the speaker recipes: leave-one-corpus-out figures against how much labelled data a fold
learnt from, to tell whether more voices, or more kinds of recording, would close the gap to the targets.

    python -m training.validate.loco --task gender --speaker-fraction 0.5 --runs R --out R   # one point per run (loco.py)
    python -m training.validate.learning_curve --task gender --point all=training/runs/exp/base \\
        --point voices_half=training/runs/exp/gsf50 ...                            # -> models/gender/learning_curve.json

Each point is one full leave-one-corpus-out run of the same recipe and seed with part of the training data:
`--speaker-fraction F` keeps a nested share of every corpus' and gender's training speakers (the same corpora,
fewer voices); `--corpora-count K` keeps K of the other corpora, all their speakers (fewer kinds of recording).
The number of labelled voices each fold learnt from is counted here by the rules loco._fold applies.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

from training.data import clips as D
from training.validate import loco as L
from training.data import speakers as SD

ROOT = os.path.dirname(D.HERE)


def fold_voices(task: str, clips, held: str, fraction: float, count: int) -> tuple[int, list]:
    """(labelled training voices, training corpora) of one fold, by the rules loco._fold applies."""
    others = L.training_corpora(held, count, L.corpora_of(task, clips))
    items = SD.training_items(SD.clips_of(task, clips, corpora=others, split_name="train"), speaker_fraction=fraction)
    return len({c.speaker for c, _ in items}), others


def point(task: str, clips, label: str, run_dir: str) -> dict:
    rep = json.load(open(os.path.join(run_dir, task, "loco.json")))
    r = rep["recipe"]
    fraction, count = r.get("speaker_fraction", 1.0), r.get("corpora_count", 0)
    metric = "accuracy" if task == "gender" else "uar"
    folds = {}
    for corpus, f in rep["folds"].items():
        voices, corpora = fold_voices(task, clips, corpus, fraction, count)
        folds[corpus] = {"train_voices": voices, "train_corpora": corpora,
                         "clean": f["clean"][metric], "phone": f["phone"][metric]}
    out = {"label": label, "speaker_fraction": fraction, "corpora_count": count, "seed": r.get("seed", 1),
           "command": command(task, fraction, count), "metric": metric,
           "mean_train_voices": float(np.mean([f["train_voices"] for f in folds.values()])),
           "mean_train_corpora": float(np.mean([len(f["train_corpora"]) for f in folds.values()])),
           "folds": folds, "pooled_clean": rep["pooled_clean"][metric], "telephone": rep["telephone"]["all"][metric],
           "mean_clean": float(np.mean([f["clean"] for f in folds.values()])),
           "mean_phone": float(np.mean([f["phone"] for f in folds.values()]))}
    if task == "gender":
        out["cells"] = {k: rep["cells"][k]["accuracy"] for k in ("low-arousal women", "high-arousal men")}
    else:
        out["neutral_recall"] = rep["pooled_clean"]["recall"]["neutral"]
    return out


def command(task: str, fraction: float, count: int) -> str:
    cmd = f"python -m training.validate.loco --task {task}"
    cmd += f" --speaker-fraction {fraction:g}" if fraction < 1.0 else ""
    cmd += f" --corpora-count {count}" if count else ""
    return cmd


def slope_per_doubling(points, key="mean_clean") -> float | None:
    """Least-squares change of `key` per doubling of the mean number of training voices, over the points that
    keep every corpus (the voices curve)."""
    pts = [(np.log2(p["mean_train_voices"]), p[key]) for p in points if not p["corpora_count"]]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True, choices=("gender", "arousal", "emotions"))
    ap.add_argument("--point", action="append", required=True, help="label=run folder (of a loco.py run)")
    ap.add_argument("--out", default=None, help="default: models/<task>/learning_curve.json")
    a = ap.parse_args(argv)
    clips = D.load_clips()
    points = [point(a.task, clips, *p.split("=", 1)) for p in a.point]
    res = {"task": a.task, "points": points,
           "per_doubling_of_voices": {k: slope_per_doubling(points, k) for k in ("mean_clean", "mean_phone")}}
    out = a.out or os.path.join(ROOT, "models", a.task, "learning_curve.json")
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)
        fh.write("\n")
    for p in points:
        print(f"{p['label']:14s} voices {p['mean_train_voices']:6.1f} corpora {p['mean_train_corpora']:.1f} "
              f"mean clean {p['mean_clean']:.3f} phone {p['mean_phone']:.3f} pooled {p['pooled_clean']:.3f}")
    print("per doubling of voices:", res["per_doubling_of_voices"])


if __name__ == "__main__":
    main()
