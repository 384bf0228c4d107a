"""Leave-one-corpus-out estimate of a fused ensemble made by ensemble_add.py: the shipped members plus a new one.

    python -m training.added_member_loco --task gender --runs training/runs/exp/embedvar64 --old-members 1 --out models

The shipped members never heard some corpora (loco.SHIPPED_TRAINED_ON); on those, the new member's fold model that
was trained without the corpus (loco.py's <runs>/<task>/<corpus>.pt) is fused with the shipped file step by step,
exactly as the new file fuses them (mean of the members' log-probabilities, the shipped file counting for its
members), and clip decisions are scored as everywhere else.  Writes <out>/<task>/loco_added_member.json.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch

from . import bank as B
from . import data as D
from . import loco as L
from . import speaker_data as SD
from .model import Net
from .speaker_config import CONFIGS


def fuse(p_old, p_new, old_members):
    """Per-step probabilities [.., C] of the fused file: the softmax of the mean of its members' log-probabilities,
    the shipped file's output counting for its `old_members` members (their mean log-probability, up to a constant)."""
    lp = (old_members * np.log(np.maximum(p_old, 1e-30)) + np.log(np.maximum(p_new, 1e-30))) / (old_members + 1)
    p = np.exp(lp - lp.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def fused_clip_probs(task, bank, clips_v, fold, old_members):
    """Clip probabilities of (shipped, new member alone, fused) for (clip, version) pairs."""
    sess, order = L._shipped_session(task)
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
    """model(x [1, T, 64] tensor) -> per-step probabilities of the fused file (for loco.pitch_slice); with fold None,
    of the shipped file alone."""

    def __init__(self, task, fold, old_members):
        self.sess, self.order = L._shipped_session(task)
        self.fold, self.k = fold, old_members

    def __call__(self, x):
        p_old = self.sess.run(None, {"features": x.numpy().astype(np.float32)})[0][:, :, self.order]
        if self.fold is None:  # the shipped file alone
            return torch.from_numpy(p_old)
        return torch.from_numpy(fuse(p_old, self.fold(x).numpy(), self.k))


def pitch_scores(task, clips, held, fold, old_members):
    """Pitch moved towards the other gender, envelope kept (loco.pitch_slice's clips), for the three models."""
    out = {}
    for name, model in (("shipped", FusedModel(task, None, old_members)), ("new", fold),
                        ("fused", FusedModel(task, fold, old_members))):
        z = L.pitch_slice(model, clips, held)
        out[name] = (z["pitch_y"], z["pitch"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="gender")
    ap.add_argument("--runs", required=True, help="loco.py --runs folder of the new member's recipe")
    ap.add_argument("--cfg", default='{"lifter": 0}', help="the new member's model config (gender 1.3.0's member 3)")
    ap.add_argument("--old-members", type=int, default=2,
                    help="weight of the shipped file in the fusion, counted in members (1: as much as the new member, "
                         "as ensemble_add --weight-new 0.5)")
    ap.add_argument("--out", default=os.path.join(L.ROOT, "models"))
    ap.add_argument("--corpora", default=None, help="comma-separated subset of the corpora the old members never heard")
    a = ap.parse_args()
    torch.set_num_threads(2)
    clips = D.load_clips()
    by_idx = {c.idx: c for c in clips}
    bank = B.build(clips)
    unseen = [c for c in SD.CORPORA if c not in L.SHIPPED_TRAINED_ON[a.task] and (not a.corpora or c in a.corpora.split(","))]
    rep = {"corpora": unseen, "old_members": a.old_members, "runs": a.runs, "cfg": json.loads(a.cfg), "per_corpus": {}}
    pooled: dict = {}
    for corpus in unseen:
        fold = Net(len(SD.CLASSES[a.task]), **{**CONFIGS[a.task], **json.loads(a.cfg)})
        fold.load_state_dict(torch.load(os.path.join(a.runs, a.task, f"{corpus}.pt")))
        fold.eval()
        held = SD.clips_of(a.task, clips, corpora=[corpus])
        y = np.array([y for _, y in held])
        rep["per_corpus"][corpus] = {}
        for version in ("clean", "phone"):
            probs = fused_clip_probs(a.task, bank, [(c, version) for c, _ in held], fold, a.old_members)
            rep["per_corpus"][corpus][version] = {k: L._scores(a.task, y, p) for k, p in probs.items()}
            acc = pooled.setdefault(version, {"idx": [], "y": [], **{k: [] for k in probs}})
            acc["idx"].extend(c.idx for c, _ in held); acc["y"].extend(y)
            for k, p in probs.items():
                acc[k].extend(p)
        if a.task == "gender":
            for k, (py, pp) in pitch_scores(a.task, clips, held, fold, a.old_members).items():
                acc = pooled.setdefault("pitch", {})
                acc.setdefault(k, ([], []))[0].extend(py)
                acc[k][1].extend(pp)
        print(corpus, {v: {k: r["accuracy"] for k, r in x.items()} for v, x in rep["per_corpus"][corpus].items()}, flush=True)
    pitch = pooled.pop("pitch", None)
    if pitch:  # pitch moved with the envelope kept: must not flip the decision
        rep["pitch_moved"] = {k: L._scores(a.task, np.array(y), np.array(p)) for k, (y, p) in pitch.items()}
    rep["pooled"] = {}
    for version, acc in pooled.items():
        idx, y = np.array(acc["idx"]), np.array(acc["y"])
        rep["pooled"][version] = {k: {"all": L._scores(a.task, y, np.array(acc[k])),
                                      "cells": L.cells(a.task, by_idx, idx, y, np.array(acc[k]))}
                                  for k in ("shipped", "new", "fused")}
    os.makedirs(os.path.join(a.out, a.task), exist_ok=True)
    with open(os.path.join(a.out, a.task, "loco_added_member.json"), "w") as fh:
        json.dump(rep, fh, indent=1)
        fh.write("\n")
    print(json.dumps({v: {k: r["all"]["accuracy"] for k, r in x.items()} for v, x in rep["pooled"].items()}),
          json.dumps({k: r["accuracy"] for k, r in rep.get("pitch_moved", {}).items()}))


if __name__ == "__main__":
    main()
