"""Validation set and metrics of the per-task models: shared by the longform recipe (recipes/longform.py), ensembles (export/ensemble.py)
and the prior shift (export/prior_shift.py), so none of those imports another for them."""
from __future__ import annotations

import numpy as np
import torch

from training.data import clips as D
from training.features import logmel_fast, step_levels

CLASSES = {"speech": D.SPEECH_CLASSES, "gender": D.GENDER_CLASSES, "arousal": D.AROUSAL_CLASSES}
VOICED_DBFS = -50.0


def val_set(task, clips, store, quick=False):
    items = []
    for c in clips:
        if D.task_split(task, c) != "val":
            continue
        lab = D.task_label(task, c)
        if lab is None:
            continue
        items.append((c, CLASSES[task].index(lab)))
    if quick:
        rng = np.random.default_rng(0)
        items = [items[i] for i in sorted(rng.choice(len(items), min(150, len(items)), replace=False))]
    out = []
    for c, y in items:
        x = store.get(c)
        if x.size == 0:
            continue
        out.append((c, y, logmel_fast(x), step_levels(x)))
    return out


# ---------------------------------------------------------------- metrics
def recall_table(y, p, n):
    rec = {}
    for k in range(n):
        m = y == k
        rec[k] = float((p[m] == k).mean()) if m.any() else float("nan")
    return rec


@torch.no_grad()
def evaluate(model, task, vs):
    model.eval()
    cls = CLASSES[task]
    ys, ps, srcs, step_y, step_p = [], [], [], [], []
    for c, y, feats, lv in vs:
        pr = model(torch.from_numpy(feats)[None])[0].numpy()  # [S, C]
        voiced = lv >= VOICED_DBFS
        if not voiced.any():
            voiced = lv >= lv.max() - 20
        pv = pr[voiced]
        ys.append(y)
        ps.append(int(pv.mean(0).argmax()))
        srcs.append(c.source)
        step_y.append(np.full(pv.shape[0], y))
        step_p.append(pv.argmax(1))
    ys, ps, srcs = np.array(ys), np.array(ps), np.array(srcs)
    sy, sp = np.concatenate(step_y), np.concatenate(step_p)

    def block(mask_y, mask_p, sy_, sp_):
        rec = recall_table(mask_y, mask_p, len(cls))
        r = {f"recall_{cls[k]}": round(v, 4) for k, v in rec.items() if not np.isnan(v)}
        vals = [v for v in rec.values() if not np.isnan(v)]
        r["clip_balanced_accuracy"] = round(float(np.mean(vals)), 4)
        r["clip_accuracy"] = round(float((mask_y == mask_p).mean()), 4)
        srec = [v for v in recall_table(sy_, sp_, len(cls)).values() if not np.isnan(v)]
        r["step_balanced_accuracy"] = round(float(np.mean(srec)), 4)
        r["n_clips"] = int(mask_y.size)
        return r

    res = {"overall": block(ys, ps, sy, sp), "per_source": {}}
    stepsrc = np.concatenate([np.full(a.size, s) for a, s in zip(step_y, srcs)])
    for s in sorted(set(srcs)):
        m, ms = srcs == s, stepsrc == s
        res["per_source"][s] = block(ys[m], ps[m], sy[ms], sp[ms])
    if task == "speech":
        si = cls.index("speech")
        t, p = ys == si, ps == si
        tp, fp, fn = (t & p).sum(), (~t & p).sum(), (t & ~p).sum()
        res["overall"]["speech_f1"] = round(float(2 * tp / max(1, 2 * tp + fp + fn)), 4)
    if task == "arousal":
        inc = np.isin(srcs, ["ravdess", "baved"])
        ms = np.isin(stepsrc, ["ravdess", "baved"])
        res["in_corpus_heldout_speakers"] = block(ys[inc], ps[inc], sy[ms], sp[ms])
        res["cross_corpus_urdu"] = res["per_source"].get("urdu")
    return res


def summary_metrics(task, res):
    o = res["overall"]
    m = {"validation": "source- and speaker-disjoint held-out clips (see MODEL_CARD.md)",
         "clip_balanced_accuracy": o["clip_balanced_accuracy"], "step_balanced_accuracy": o["step_balanced_accuracy"],
         "per_class_recall": {k[7:]: v for k, v in o.items() if k.startswith("recall_")},
         "per_source_clip_balanced_accuracy": {s: r["clip_balanced_accuracy"] for s, r in res["per_source"].items()}}
    if task == "speech":
        m["speech_f1"] = o["speech_f1"]
    if task == "gender":
        m["utterance_accuracy"] = o["clip_accuracy"]
        m["per_source_utterance_accuracy"] = {s: r["clip_accuracy"] for s, r in res["per_source"].items()}
    if task == "arousal":
        m["uar"] = o["clip_balanced_accuracy"]
        m["uar_in_corpus_heldout_speakers"] = res["in_corpus_heldout_speakers"]["clip_balanced_accuracy"]
        if res.get("cross_corpus_urdu"):
            m["uar_cross_corpus_urdu"] = res["cross_corpus_urdu"]["clip_balanced_accuracy"]
    return m
