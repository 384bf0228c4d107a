"""The leave-one-corpus-out report (models/<task>/loco.json): the fold files of validate/loco.py scored clean, through
a telephone codec (per codec), per cell and pitch-moved, with and without the speakers the label audit flags; beside
them the previous version in git on the same clips.  And the estimate of a fused ensemble with an added member
(loco_added_member.json): the shipped file fused step by step with the new member's fold model, exactly as
export/ensemble.py add fuses them.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess

import numpy as np
import torch

from training.data import bank as B
from training.data import clips as D
from training.data import speakers as SD
from training.validate import label_audit
from training.validate.slices import cells, pitch_slice, scores

SHIPPED_CACHE = os.path.join(D.HERE, "runs", "loco")  # the previous versions' files, extracted from git once
ROOT = os.path.dirname(D.HERE)


def corpora_of(task, clips):
    return sorted({c.source for c in clips if SD.label(task, c) is not None})


def report(task, clips, bank, runs):
    by_idx = {c.idx: c for c in clips}
    folds, pooled = {}, {v: ([], [], []) for v in ("clean", "phone")}
    flagged = label_audit.flagged_speakers() if task == "gender" else set()
    pitch = ([], [])
    for corpus in corpora_of(task, clips):
        fn = os.path.join(runs, task, f"{corpus}.npz")
        if not os.path.exists(fn):
            continue
        z = np.load(fn)
        spk = {by_idx[i].speaker for i in z["idx"]}
        folds[corpus] = {"speakers": len(spk), "clean": scores(task, z["y"], z["clean"]),
                         "phone": scores(task, z["y"], z["phone"])}
        keep = np.array([by_idx[i].speaker not in flagged for i in z["idx"]], dtype=bool)
        if task == "gender" and not keep.all():  # the same fold without the speakers the label audit flags
            folds[corpus]["audited"] = {"flagged_speakers": len({by_idx[i].speaker for i in z["idx"][~keep]}),
                                        "clean": scores(task, z["y"][keep], z["clean"][keep]),
                                        "phone": scores(task, z["y"][keep], z["phone"][keep])}
        for v in pooled:
            pooled[v][0].extend(z["idx"]); pooled[v][1].extend(z["y"]); pooled[v][2].extend(z[v])
        if "pitch" in z and len(z["pitch"]):
            folds[corpus]["pitch_moved"] = scores(task, z["pitch_y"], z["pitch"])
            pitch[0].extend(z["pitch_y"]); pitch[1].extend(z["pitch"])
    idx, y, p = (np.array(a) for a in pooled["clean"])
    rep = {"task": task, "classes": SD.CLASSES[task], "folds": folds,
           "pooled_clean": scores(task, y, p), "cells": cells(task, by_idx, idx, y, p)}
    pidx, py, pp = (np.array(a) for a in pooled["phone"])
    rep["telephone"] = {"all": scores(task, py, pp)}
    if flagged:
        keep = np.array([by_idx[i].speaker not in flagged for i in idx], dtype=bool)
        rep["audited"] = {"flagged_speakers": sorted(flagged), "pooled_clean": scores(task, y[keep], p[keep]),
                          "telephone": scores(task, py[keep], pp[keep])}
    codec = {int(c): str(k) for c, k in zip(bank.clip_idx, bank.codec) if k}
    for k in sorted(set(codec.values())):
        m = np.array([codec.get(int(i)) == k for i in pidx])
        rep["telephone"][k] = scores(task, py[m], pp[m])
    rep["telephone_cells"] = cells(task, by_idx, pidx, py, pp)
    if pitch[0]:
        rep["pitch_moved"] = scores(task, np.array(pitch[0]), np.array(pitch[1]))
    rep["shipped"] = shipped_report(task, clips, bank)
    return rep


# the last commit that shipped gender 1.2.0 and arousal 1.0.0 (the models 2.0 replaces)
PREVIOUS_REV = "c22f1e0"


def shipped_model_path(task, name="model.onnx"):
    """The previous version's file of the task (model.onnx or manifest.json), extracted from git once; None for
    a task without a previous version."""
    os.makedirs(SHIPPED_CACHE, exist_ok=True)
    fn = os.path.join(SHIPPED_CACHE, f"shipped_{task}.{'onnx' if name == 'model.onnx' else 'manifest.json'}")
    if not os.path.exists(fn):
        r = subprocess.run(["git", "-C", ROOT, "show", f"{PREVIOUS_REV}:models/{task}/{name}"], capture_output=True)
        if r.returncode != 0:
            return None
        with open(fn, "wb") as fh:
            fh.write(r.stdout)
    return fn


@functools.lru_cache(maxsize=None)
def _shipped_session(task):
    """onnxruntime session of the previous model and its output columns in this task's class order."""
    import onnxruntime as ort
    sess = ort.InferenceSession(shipped_model_path(task), providers=["CPUExecutionProvider"])
    meta = json.load(open(shipped_model_path(task, "manifest.json")))
    return sess, [meta["raw_keys"].index(k) for k in SD.CLASSES[task]]


def shipped_probs(task, bank, clips_v):
    """Clip probabilities of the shipped model (onnxruntime) for (clip, version) pairs."""
    if shipped_model_path(task) is None:
        return None
    sess, order = _shipped_session(task)
    return np.array(onnx_clip_probs(sess, bank, clips_v, order))


def onnx_clip_probs(sess, bank, clips_v, order=None):
    """Clip probabilities (bank.voiced_mean) of an onnxruntime session for (clip, version) pairs; `order` picks and
    orders its output columns."""
    out = []
    for c, version in clips_v:
        i = bank.find(c, version)
        f, v = bank.features(i), bank.voiced_of(i)
        p = sess.run(None, {"features": f.astype(np.float32)[None]})[0][0]
        out.append(B.voiced_mean(p if order is None else p[:, order], v))
    return out


# the speaker groups the shipped 1.x models never saw (they trained on the other speakers of these corpora)
SHIPPED_TRAINED_ON = {"gender": ("ravdess", "baved", "urdu"), "arousal": ("ravdess", "baved")}


def shipped_report(task, clips, bank):
    """The previous model on the same clips: per corpus (only speakers it never saw), and pooled over the corpora
    it never saw at all, with the cells."""
    if task not in SHIPPED_TRAINED_ON or shipped_model_path(task) is None:
        return None
    by_idx = {c.idx: c for c in clips}
    out, unseen = {}, {v: ([], [], []) for v in ("clean", "phone")}
    for corpus in corpora_of(task, clips):
        held = SD.clips_of(task, clips, corpora=[corpus])
        seen = corpus in SHIPPED_TRAINED_ON[task]
        if seen:
            held = [(c, y) for c, y in held if D.split_of(c) == "val" and D.task_split(task, c) == "val"]
        if not held:
            continue
        y = np.array([y for _, y in held])
        out[corpus] = {"clips": "held-out speakers" if seen else "all"}
        for v in ("clean", "phone"):
            p = shipped_probs(task, bank, [(c, v) for c, _ in held])
            out[corpus][v] = scores(task, y, p)
            if not seen:
                unseen[v][0].extend(c.idx for c, _ in held); unseen[v][1].extend(y); unseen[v][2].extend(p)
    pooled = {}
    for v, (idx, y, p) in unseen.items():
        if idx:
            idx, y, p = np.array(idx), np.array(y), np.array(p)
            pooled[v] = {"all": scores(task, y, p), "cells": cells(task, by_idx, idx, y, p)}
    return {"per_corpus": out, "unseen_corpora": sorted(c for c, r in out.items() if r["clips"] == "all"), "pooled_unseen": pooled}



# ------------------------------------------------------------------ a member added to the shipped ensemble
def fuse(p_old, p_new, old_members):
    """Per-step probabilities [.., C] of the fused file: the softmax of the mean of its members' log-probabilities,
    the shipped file's output counting for its `old_members` members (their mean log-probability, up to a constant)."""
    lp = (old_members * np.log(np.maximum(p_old, 1e-30)) + np.log(np.maximum(p_new, 1e-30))) / (old_members + 1)
    p = np.exp(lp - lp.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def fused_clip_probs(task, bank, clips_v, fold, old_members):
    """Clip probabilities of (shipped, new member alone, fused) for (clip, version) pairs."""
    sess, order = _shipped_session(task)
    out = {"shipped": [], "new": [], "fused": []}
    for c, version in clips_v:
        i = bank.find(c, version)
        f, v = bank.features(i).astype(np.float32), bank.voiced_of(i)
        m = v if v.any() else np.ones_like(v)
        p_old = sess.run(None, {"features": f[None]})[0][0][:, order]
        with torch.no_grad():
            p_new = fold(torch.from_numpy(f)[None])[0].numpy()
        for k, x in (("shipped", p_old), ("new", p_new), ("fused", fuse(p_old, p_new, old_members))):
            out[k].append(x[m].mean(0))
    return {k: np.array(x) for k, x in out.items()}


class FusedModel:
    """model(x [1, T, 64] tensor) -> per-step probabilities of the fused file (for pitch_slice); with fold None,
    of the shipped file alone."""

    def __init__(self, task, fold, old_members):
        self.sess, self.order = _shipped_session(task)
        self.fold, self.k = fold, old_members

    def __call__(self, x):
        p_old = self.sess.run(None, {"features": x.numpy().astype(np.float32)})[0][:, :, self.order]
        if self.fold is None:  # the shipped file alone
            return torch.from_numpy(p_old)
        return torch.from_numpy(fuse(p_old, self.fold(x).numpy(), self.k))


def pitch_scores(task, clips, held, fold, old_members):
    """Pitch moved towards the other gender, envelope kept (pitch_slice's clips), for the three models."""
    out = {}
    for name, model in (("shipped", FusedModel(task, None, old_members)), ("new", fold),
                        ("fused", FusedModel(task, fold, old_members))):
        z = pitch_slice(model, clips, held)
        out[name] = (z["pitch_y"], z["pitch"])
    return out


def added_member_report(task, clips, bank, runs, cfg, old_members, corpora=None) -> dict:
    """loco_added_member.json: on the corpora the shipped members never heard, the new member's fold models (in
    <runs>/<task>/<corpus>.pt, model config `cfg`) alone and fused with the shipped file (`old_members`: the
    shipped file's weight in the fusion, counted in members; 1 = as much as the new member)."""
    from training.models.configs import SPEAKER
    from training.models.net import Net
    by_idx = {c.idx: c for c in clips}
    unseen = [c for c in SD.CORPORA if c not in SHIPPED_TRAINED_ON[task] and (not corpora or c in corpora)]
    rep = {"corpora": unseen, "old_members": old_members, "runs": runs, "cfg": cfg, "per_corpus": {}}
    pooled: dict = {}
    for corpus in unseen:
        fold = Net(len(SD.CLASSES[task]), **{**SPEAKER[task], **cfg})
        fold.load_state_dict(torch.load(os.path.join(runs, task, f"{corpus}.pt")))
        fold.eval()
        held = SD.clips_of(task, clips, corpora=[corpus])
        y = np.array([y for _, y in held])
        rep["per_corpus"][corpus] = {}
        for version in ("clean", "phone"):
            probs = fused_clip_probs(task, bank, [(c, version) for c, _ in held], fold, old_members)
            rep["per_corpus"][corpus][version] = {k: scores(task, y, p) for k, p in probs.items()}
            acc = pooled.setdefault(version, {"idx": [], "y": [], **{k: [] for k in probs}})
            acc["idx"].extend(c.idx for c, _ in held); acc["y"].extend(y)
            for k, p in probs.items():
                acc[k].extend(p)
        if task == "gender":
            for k, (py, pp) in pitch_scores(task, clips, held, fold, old_members).items():
                acc = pooled.setdefault("pitch", {})
                acc.setdefault(k, ([], []))[0].extend(py)
                acc[k][1].extend(pp)
        print(corpus, {v: {k: r["accuracy"] for k, r in x.items()} for v, x in rep["per_corpus"][corpus].items()}, flush=True)
    pitch = pooled.pop("pitch", None)
    if pitch:  # pitch moved with the envelope kept: must not flip the decision
        rep["pitch_moved"] = {k: scores(task, np.array(y), np.array(p)) for k, (y, p) in pitch.items()}
    rep["pooled"] = {}
    for version, acc in pooled.items():
        idx, y = np.array(acc["idx"]), np.array(acc["y"])
        rep["pooled"][version] = {k: {"all": scores(task, y, np.array(acc[k])),
                                      "cells": cells(task, by_idx, idx, y, np.array(acc[k]))}
                                  for k in ("shipped", "new", "fused")}
    return rep
