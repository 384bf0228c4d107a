"""Experiment: can our network learn the speaker encoder's view of a voice well enough to carry its gender
probe to a corpus it never heard?

    python -m training.exp_embed --hold urdu,ased,hyke

For each held-out corpus X: a student (model.py's trunk, wider, + mean/std pooling over voiced steps + a linear
map to 256-d) regresses the teacher's d-vector (teachers.npz, Resemblyzer 0.1.4) of every clip outside X that
has one (clean, telephone and noisy versions all aim at the clean clip's d-vector), labelled or not.  Then a
logistic probe on the student's embeddings of the labelled clips outside X predicts the gender of X's clips
(and the teacher's own probe, trained on real d-vectors outside X, is applied to the student's embeddings).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import augment as A
from . import bank as B
from . import data as D
from . import distill as DI
from . import speaker_data as SD
from . import speaker_train as ST
from .embed_pretrain import crop
from .model import Net



class Student(nn.Module):
    def __init__(self, c2=128, dim=256, **cfg):
        super().__init__()
        self.net = Net(2, c1=32, c2=c2, dil=(1, 2, 4, 8), norm_k=63, **cfg)
        self.emb = nn.Linear(2 * c2, dim)

    def forward(self, x, w):  # x [B, T, 64], w [B, S] voiced weights -> unit embeddings [B, dim]
        h = F.relu(self.net.trunk(x))  # [B, c, S]
        ws = w[:, None, :] / w.sum(-1)[:, None, None].clamp(min=1.0)
        mu = (h * ws).sum(-1)
        sd = ((h - mu[..., None]) ** 2 * ws).sum(-1).clamp(min=1e-6).sqrt()
        return F.normalize(self.emb(torch.cat([mu, sd], 1)), dim=-1)


def train_student(bank, items, epochs, seed=1, log=print):
    """items: (bank row, target embedding)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    m = Student()
    bs = 64
    steps = epochs * len(items) // bs
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps, pct_start=0.1)
    t0 = time.time()
    for s in range(steps):
        pick = rng.integers(len(items), size=bs)
        xs, ws = zip(*(crop(bank, items[k][0], rng) for k in pick))
        x, w = torch.from_numpy(np.stack(xs)), torch.from_numpy(np.stack(ws))
        A.frequency_mask(x, rng)
        t = torch.from_numpy(np.stack([items[k][1] for k in pick]))
        loss = (1 - (m(x, w) * t).sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if s % 500 == 0:
            log(f"step {s}/{steps} loss {loss.item():.4f} ({time.time() - t0:.0f}s)")
    m.eval()
    return m


@torch.no_grad()
def embed(m, bank, rows):
    out = []
    for i in rows:
        f, v = bank.features(i).astype(np.float32), bank.voiced_of(i).astype(np.float32)
        if not v.any():
            v = np.ones_like(v)
        out.append(m(torch.from_numpy(f)[None], torch.from_numpy(v)[None])[0].numpy())
    return np.stack(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hold", default="urdu,ased,hyke")
    ap.add_argument("--epochs", type=int, default=20)
    a = ap.parse_args()
    torch.set_num_threads(2)
    clips = D.load_clips()
    by_idx = {c.idx: c for c in clips}
    bank = ST.training_bank(clips, distill=True)
    op = DI.opinions()
    gender = {c.idx: y for c, y in SD.clips_of("gender", clips)}
    res = {}
    for hold in a.hold.split(","):
        items = [(bank.find(by_idx[i], v), e) for i, (_, e) in op.items() if by_idx[i].source != hold
                 for v in B.VERSIONS if bank.find(by_idx[i], v) is not None]
        m = train_student(bank, items, a.epochs, log=lambda s: print(f"[{hold}] {s}", flush=True))
        train_lab = [i for i in op if i in gender and by_idx[i].source != hold]
        test = [c.idx for c, _ in SD.clips_of("gender", clips, corpora=[hold])]
        y_tr = np.array([gender[i] for i in train_lab])
        y_te = np.array([gender[i] for i in test])
        E_tr = embed(m, bank, [bank.find(by_idx[i], "clean") for i in train_lab])
        r = {}
        for version in ("clean", "phone"):
            E_te = embed(m, bank, [bank.find(by_idx[i], version) for i in test])
            w = DI.fit_probe(E_tr, y_tr)
            r[f"student_probe_{version}"] = float(((DI.probe_female(w, E_te) > 0.5) == (y_te == 0)).mean())
            wt = DI.probe_without((hold,))
            r[f"teacher_probe_on_student_{version}"] = float(((DI.probe_female(wt, E_te) > 0.5) == (y_te == 0)).mean())
        tt = [i for i in test if i in op]
        r["cos_to_teacher_clean"] = float(np.mean([(embed(m, bank, [bank.find(by_idx[i], "clean")])[0] * op[i][1]).sum() for i in tt[:300]]))
        print(hold, json.dumps(r), flush=True)
        res[hold] = r
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
