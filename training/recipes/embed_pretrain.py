"""Stage 1 of the gender recipe with `--embed-steps`: the network's trunk first learns the speaker encoder's view of a
voice, then (recipes/speaker.py) only the per-step gender head is trained on our labels.

Why: a logistic probe on the teacher's d-vectors (Resemblyzer 0.1.4, trained by its authors on thousands of
speakers; teachers.py) holds on corpora it never saw where our label-trained network does not (URDU's shouting men,
hyke's women on the phone).  Here the trunk regresses the d-vector of every clip the teacher judged (labelled
training speakers and the unlabelled VoxLingua / KDE speech), from its clean, telephone and noisy recordings alike,
so the features it learns are the encoder's, not "high pitch = female".  A linear head on the voiced-step mean of
the trunk's features is the embedding; since the gender head is linear on the same features, the clip mean of its
logits is a linear probe on that embedding.  The teacher is used at training time only.
"""
from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from training.data import augment as A
from training.data import bank as B
from training.data import distill as DI
from training.data import teacher_clips as DD
from training.features import FRAMES_PER_STEP

STEPS = 64
DIM = 256
VARIANT_VERSIONS = ("var0", "var1", "varp")  # variant_bank.py


def teacher_items(bank: B.Bank, items):
    """(bank row, unit d-vector) for every recording of the clips the teacher judged whose speaker trains this model:
    the speakers of `items` and the unlabelled sources (never a held-out corpus or a held-out speaker)."""
    speakers = {DD.speaker_of(c) for c, *_ in items}
    by_idx = {c.idx: c for c in DI.all_clips()}
    out = []
    for i, (_, e) in sorted(DI.opinions().items()):
        c = by_idx[i]
        if c.source in DD.UNLABELLED or DD.speaker_of(c) in speakers:
            # WORLD voice variants, where the bank has them (--variants), aim at the original clip's d-vector: the same
            # voice with its pitch moved must map to the same embedding
            out.extend((r, e) for r in (bank.find(c, v) for v in B.VERSIONS + VARIANT_VERSIONS) if r is not None)
    return out


def crop(bank: B.Bank, row: int, rng):
    """Up to STEPS steps of one recording at a jittered level, padded with the front end's floor."""
    f, v = bank.features(row), bank.voiced_of(row)
    X = np.full((STEPS * FRAMES_PER_STEP, f.shape[1]), np.log(1e-8), dtype=np.float32)
    W = np.zeros(STEPS, dtype=np.float32)
    take = min(STEPS, v.size)
    st = int(rng.integers(0, v.size - take + 1))
    X[:take * FRAMES_PER_STEP] = f[st * FRAMES_PER_STEP:(st + take) * FRAMES_PER_STEP].astype(np.float32) + np.float32(rng.uniform(-3, 1))
    W[:take] = v[st:st + take]
    return X, W


def embedding(model, head, x, w):
    """Unit embedding [B, DIM] of examples x [B, T, 64] with voiced-step weights w [B, S]."""
    h = head(F.relu(model.trunk(x)))  # [B, DIM, S]
    pooled = (h * w[:, None, :]).sum(-1) / w.sum(-1, keepdim=True).clamp(min=1.0)
    return F.normalize(pooled, dim=-1)


def pretrain(model, bank: B.Bank, items, steps: int, seed: int, lr: float = 3e-3, log=print):
    """Trains model.trunk (in place) to regress the teacher's d-vectors of `teacher_items(bank, items)`."""
    pairs = teacher_items(bank, items)
    rng = np.random.default_rng(seed + 17)
    head = nn.Conv1d(model.proj.out_channels, DIM, 1)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    model.train()
    bs, t0, tot = 64, time.time(), 0.0
    for s in range(steps):
        pick = rng.integers(len(pairs), size=bs)
        xs, ws = zip(*(crop(bank, pairs[k][0], rng) for k in pick))
        x, w = torch.from_numpy(np.stack(xs)), torch.from_numpy(np.stack(ws))
        A.frequency_mask(x, rng)  # as in the label stage
        target = torch.from_numpy(np.stack([pairs[k][1] for k in pick]))
        loss = (1 - (embedding(model, head, x, w) * target).sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        tot += float(loss.detach())
        if (s + 1) % 500 == 0:
            log(f"[embed] step {s + 1}/{steps} 1-cos {tot / 500:.4f} ({time.time() - t0:.0f}s, {len(pairs)} recordings)")
            tot = 0.0
    return model


@torch.no_grad()
def pooled_features(model, bank: B.Bank, row: int) -> np.ndarray:
    """Voiced-step mean of the trunk's features of one recording [c2]."""
    f, v = bank.features(row).astype(np.float32), bank.voiced_of(row).astype(np.float32)
    v = v if v.any() else np.ones_like(v)
    h = F.relu(model.trunk(torch.from_numpy(f)[None]))[0].numpy()
    return (h * v).sum(1) / v.sum()


def fit_head(model, bank: B.Bank, items):
    """Stage 2: the gender head becomes a logistic probe (distill.fit_probe) on the pooled trunk features of the
    training clips the teacher judged (at most 24 per speaker, so no corpus outweighs the others), in all three
    recordings.  A 1x1 head is linear, so the clip mean of its logits is the probe's decision; training the head on
    per-step labels instead (the label stage of recipes/speaker.py) scored lower on held-out corpora (URDU 0.743 vs 0.853)."""
    model.eval()
    op = DI.opinions()
    X, y = [], []
    for c, label, *_ in items:
        if c.idx in op:
            for v in B.VERSIONS:
                r = bank.find(c, v)
                if r is not None:
                    X.append(pooled_features(model, bank, r))
                    y.append(label)
    X, y = np.stack(X), np.array(y)
    mu, sd = X.mean(0), X.std(0) + 1e-6
    w = DI.fit_probe((X - mu) / sd, y)  # P(female) = sigmoid(((x - mu) / sd) . w[:-1] + w[-1])
    a = w[:-1] / sd
    b = w[-1] - float(mu @ a)
    with torch.no_grad():  # softmax over [z/2, -z/2] = [sigmoid(z), 1 - sigmoid(z)], classes (female, male)
        model.head.weight[:, :, 0] = torch.from_numpy(np.stack([a / 2, -a / 2])).float()
        model.head.bias[:] = torch.tensor([b / 2, -b / 2], dtype=torch.float32)
    return model



def freeze_trunk(model):
    """Stage 2 (`--embed-then head`, the recipe measured leave-one-corpus-out): only the per-step head learns from the
    labels; the trunk (batch-norm statistics too) stays as the embedding stage left it."""
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith("head.")
    return [p for p in model.parameters() if p.requires_grad]
