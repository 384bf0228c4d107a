"""The speaker recipe: training and scoring of the speaker models (gender 1.3.0's member 3, emotions 1.x, the 2.x
candidates) from the feature bank.  Every hyperparameter is a field of recipes/config.SpeakerRecipe.

    python -m training.recipes.speaker --task emotions --out training/runs/x     # one run; `python -m training
    rebuild emotions` runs the shipped recipe file (recipes/emotions/1.1.0.json) and checks it against the manifest

Examples are drawn on the fly from bank.py: a class, then a corpus, then a speaker, then (gender) one of the
speaker's emotions, then clips of that speaker, so every corpus, speaker and emotion weighs the same whatever
its clip count; the recording version (clean / telephone / noisy) is drawn per example.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from training.data import augment as A
from training.data import bank as B
from training.data import clips as D
from training.data import teacher_clips as DD
from training.data import speakers as SD
from training.features import FRAMES_PER_STEP, logmel_fast
from training.models.net import Net
from training.recipes.config import (SpeakerRecipe, add_arguments, add_recipe_arguments, from_args, from_dict,
                                     recipe_step, step_command)
from training.recipes.train_step import weighted_step

STEPS = 64
VERSION_P = {"clean": 0.4, "phone": 0.3, "noisy": 0.3}
VARIANT_VERSIONS = ("var0", "var1", "varp")  # WORLD voice variants (variant_bank.py), gender only
LN10_DB = np.log(10.0) / 10.0  # natural-log power per dB


def training_bank(clips, distill=False, variants=False) -> B.Bank:
    """The labelled bank; with distillation (gender), merged with the bank of the teacher-labelled speech; with
    variants (gender), with the WORLD voice variants of the training speakers (variant_bank.py)."""
    bank = B.build(clips)
    if distill:
        from training.data.teacher_clips import unlabelled_clips
        bank = B.merge(bank, B.build(clips, select=unlabelled_clips(clips)))
    if variants:
        from training.data import variant_bank
        bank = B.merge(bank, variant_bank.build(clips))
    return bank


class Sampler:
    """Draws training examples [4*STEPS, 64] with per-step labels and voiced weights from the bank."""

    def __init__(self, task, bank: B.Bank, items, dvec=None, variant_p=0.0, f0=None, counter_p=0.0):
        """`items`: (clip, class) pairs, or (clip, class, target) with a soft target (class probabilities, e.g. a
        teacher's opinion on an unlabelled clip; the class then only places the clip in the balanced draw)."""
        self.task, self.bank = task, bank
        self.n_classes = len(SD.CLASSES[task])
        eye = np.eye(self.n_classes, dtype=np.float32)
        # class -> corpus -> speaker -> cell -> [clip]; a cell is an emotion for gender, else the class itself
        tree: dict = {}
        self.target = {}
        for c, y, *soft in items:
            cell = c.emotion if task == "gender" else y
            tree.setdefault(y, {}).setdefault(c.source, {}).setdefault(DD.speaker_of(c), {}).setdefault(cell, []).append(c)
            self.target[c.idx] = np.asarray(soft[0], dtype=np.float32) if soft else eye[y]
        self.tree = tree
        self.dvec = dvec or {}  # speaker -> unit d-vector of the speaker encoder (distill.speaker_dvectors)
        # clips with WORLD voice variants in the bank; an example uses them with probability variant_p
        self.variant_p = variant_p
        self.has_variants = {int(c) for c, v in zip(bank.clip_idx, bank.version) if v == "var0"} if variant_p else set()
        # gender: clips whose pitch points to the other gender (men at or above MALE_HIGH_F0, women at or below
        # FEMALE_LOW_F0); with probability counter_p an example is made of its speaker's such clips, where it has any
        self.counter_p, self.f0 = counter_p, f0 or {}
        rng = np.random.default_rng(0)
        quiet = (rng.standard_normal(256 * 400) * 10 ** (-85 / 20)).astype(np.float32)
        self.silence = logmel_fast(quiet)

    def pick_speaker(self, rng):
        y = int(rng.integers(self.n_classes))
        while y not in self.tree:
            y = int(rng.integers(self.n_classes))
        corpora = self.tree[y]
        src = sorted(corpora)[rng.integers(len(corpora))]
        spk = sorted(corpora[src])[rng.integers(len(corpora[src]))]
        return y, corpora[src][spk]

    def example(self, rng):
        y, cells = self.pick_speaker(rng)
        version = rng.choice(list(VERSION_P), p=list(VERSION_P.values()))
        if self.counter_p and rng.random() < self.counter_p:
            cells = self.counter_cells(y, cells)
        if self.has_variants and rng.random() < self.variant_p:
            with_var = {k: v for k, v in ((k, [c for c in cl if c.idx in self.has_variants]) for k, cl in cells.items()) if v}
            if with_var:
                cells, version = with_var, VARIANT_VERSIONS[rng.integers(len(VARIANT_VERSIONS))]
        T = STEPS * FRAMES_PER_STEP
        s0 = int(rng.integers(0, len(self.silence) - T))
        X = self.silence[s0:s0 + T].copy()
        lab = np.zeros((STEPS, self.n_classes), dtype=np.float32)  # per-step class probabilities (0: no label)
        w = np.zeros(STEPS, dtype=np.float32)
        nuis = np.full(STEPS, -1, dtype=np.int64)  # per-step nuisance class for the adversary (-1: none)
        pos = int(rng.integers(0, 8)) if rng.random() < 0.5 else 0
        keys = sorted(cells, key=str)
        first = cells[keys[0]][0]
        dv = self.dvec.get(DD.speaker_of(first), np.zeros(DVEC_DIM, dtype=np.float32))
        while pos < STEPS - 4:
            cl = cells[keys[rng.integers(len(keys))]]
            clip = cl[rng.integers(len(cl))]
            i = self.bank.find(clip, version)
            f, v = self.bank.features(i), self.bank.voiced_of(i)
            take = min(v.size, STEPS - pos)
            if take <= 0:
                break
            st = int(rng.integers(0, v.size - take + 1))
            level = (-20.0 - float(self.bank.active[i]) + rng.uniform(-6, 4)) * LN10_DB
            X[pos * 4:(pos + take) * 4] = f[st * 4:(st + take) * 4].astype(np.float32) + level
            lab[pos:pos + take] = self.target[clip.idx]
            w[pos:pos + take] = v[st:st + take]
            nuis[pos:pos + take] = nuisance_of(self.task, clip)
            pos += take + int(rng.integers(1, 10))
            if rng.random() < 0.25:
                break
        X = np.maximum(X + np.float32(rng.uniform(-30, 6) * LN10_DB), np.float32(np.log(1e-8)))  # whole-example gain, floored like the front end
        return X, lab, w, dv, nuis

    def counter_cells(self, y, cells):
        """The speaker's clips whose F0 points to the other gender, by cell; all of them where there is none."""
        female = SD.CLASSES[self.task][y] == "female"
        against = (lambda f: f <= FEMALE_LOW_F0) if female else (lambda f: f >= MALE_HIGH_F0)
        kept = {k: v for k, v in ((k, [c for c in cl if against(self.f0.get(c.idx, float("nan")))]) for k, cl in cells.items()) if v}
        return kept or cells

    def batch(self, n, rng):
        return tuple(torch.from_numpy(np.stack(a)) for a in zip(*(self.example(rng) for _ in range(n))))


DVEC_DIM = 256
# pitch that points to the other gender (--pitch-counter): the leave-one-corpus-out models misjudge men's clips
# above about 200-230 Hz and women's below (pitch_errors.py)
MALE_HIGH_F0, FEMALE_LOW_F0 = 180.0, 190.0

# Adversarial invariance (--adv): what the trunk must NOT carry. Gender: the clip's arousal (so raised pitch from
# shouting or lowered pitch from sadness cannot stand in for voice gender); arousal and emotions: the corpus (so
# what one corpus' actors do for a category does not become the category).
NUISANCE = {"gender": ("arousal", SD.AROUSAL_CLASSES), "arousal": ("corpus", SD.CORPORA), "emotions": ("corpus", SD.CORPORA)}


def nuisance_of(task, clip) -> int:
    kind, values = NUISANCE[task]
    v = clip.arousal if kind == "arousal" else clip.source
    return values.index(v) if v in values else -1


class _Reverse(torch.autograd.Function):
    """Gradient reversal: identity forward, gradient times -scale backward (Ganin & Lempitsky 2015); a negative
    scale passes the gradient on unreversed (the nuisance becomes a second task)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return -ctx.scale * g, None


def adversary(c2, task):
    """Per-step nuisance classifier on the trunk (not exported)."""
    return torch.nn.Sequential(torch.nn.Conv1d(c2, 64, 1), torch.nn.ReLU(), torch.nn.Conv1d(64, len(NUISANCE[task][1]), 1))


def adversary_loss(adv, h, nuis, scale):
    """Cross-entropy of the nuisance classifier on reversed trunk features, per step (0 where unknown)."""
    logits = adv(_Reverse.apply(F.relu(h), scale))
    known = (nuis >= 0).float()  # the caller weights voiced, labelled steps
    return F.cross_entropy(logits, nuis.clamp(min=0), reduction="none") * known


def speaker_dvectors():
    """speaker -> unit mean d-vector of the teacher's speaker encoder over the speaker's clips (distill.py)."""
    from training.data.distill import all_clips, opinions
    by_idx = {c.idx: c for c in all_clips()}
    acc: dict = {}
    for i, (_, e) in opinions().items():
        acc.setdefault(DD.speaker_of(by_idx[i]), []).append(e)
    return {k: (lambda m: (m / np.linalg.norm(m)).astype(np.float32))(np.mean(v, axis=0)) for k, v in acc.items()}


def dvec_loss(z, w, target):
    """1 - cosine between the voiced-step mean of the auxiliary head [B, 256, S] and the speaker's d-vector
    [B, 256], per example (0 where the speaker has no d-vector)."""
    pooled = (z * w[:, None, :]).sum(-1) / w.sum(-1, keepdim=True).clamp(min=1.0)
    has = (target.abs().sum(-1) > 0).float()
    return (1 - F.cosine_similarity(pooled, target, dim=-1)) * has


def smooth(targets, eps=0.05):
    """Label smoothing of per-step class probabilities [.., steps, classes] (as cross_entropy's label_smoothing)."""
    return targets * (1 - eps) + eps / targets.shape[-1]


def train(bank, items, args: SpeakerRecipe, log=print):
    """A model trained on `items` ((clip, y) pairs) with the recipe `args`; returns the EMA of its weights."""
    task, cfg = args.task, args.model_config()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    dvec_w = args.dvec
    counter_p = args.pitch_counter
    f0 = None
    if counter_p:
        from training.data.pitch import clip_f0
        f0 = clip_f0()
    sampler = Sampler(task, bank, items, dvec=speaker_dvectors() if dvec_w else None,
                      variant_p=args.variants, f0=f0, counter_p=counter_p)
    model = Net(len(SD.CLASSES[task]), **cfg)
    # speaker-encoder distillation: an auxiliary 1x1 head (not exported) maps the trunk to the teacher's d-vector
    aux = torch.nn.Conv1d(cfg["c2"], DVEC_DIM, 1) if dvec_w else None
    adv_w = args.adv
    adv = adversary(cfg["c2"], task) if adv_w else None
    bs = 64
    steps_per_epoch = max(1, args.examples // bs)
    embed_steps = args.embed_steps
    embed_then = args.embed_then
    params = list(model.parameters()) + [p for m in (aux, adv) if m is not None for p in m.parameters()]
    if embed_steps:  # the trunk learns the speaker encoder's embedding (embed_pretrain.py), then ...
        from training.recipes.embed_pretrain import fit_head, freeze_trunk, pretrain
        pretrain(model, bank, items, embed_steps, args.seed, log=log)
        if embed_then == "probe":  # ... the head becomes a logistic probe on the pooled features
            return fit_head(model, bank, items)
        if embed_then == "head":  # ... only the head learns from the labels (the trunk, batch norm too, stays)
            params = freeze_trunk(model)
        # ... or ("finetune") the whole network goes on learning from the labels
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.epochs * steps_per_epoch, pct_start=0.15)
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(args.ema), use_buffers=True)
    for ep in range(args.epochs):
        model.train(not (embed_steps and embed_then == "head"))
        t0, tot, cnt = time.time(), 0.0, 0.0
        for k in range(steps_per_epoch):
            xb, yb, wb, db, nb = sampler.batch(bs, rng)
            A.frequency_mask(xb, rng)
            if args.band_drop:
                A.band_edge_drop(xb, rng, args.band_drop)
            h = model.trunk(xb)
            logits = model.head(F.relu(h))
            wv = wb * (yb.sum(-1) > 0).float()
            loss = F.cross_entropy(logits, smooth(yb).transpose(1, 2), reduction="none")  # logits [B, C, S]
            if aux is not None:
                loss = loss + dvec_w * dvec_loss(aux(F.relu(h)), wv, db)[:, None]
            if adv is not None:  # DANN schedule: the reversal grows from 0 to adv_w over training
                prog = (ep * steps_per_epoch + k) / (args.epochs * steps_per_epoch)
                scale = adv_w * (2.0 / (1.0 + np.exp(-10.0 * prog)) - 1.0)
                loss = loss + adversary_loss(adv, h, nb, scale)
            t, c = weighted_step(model, ema, opt, sched, loss, wv)
            tot += t
            cnt += c
        log(f"[{task}] epoch {ep + 1}/{args.epochs} loss {tot / max(cnt, 1):.4f} ({time.time() - t0:.0f}s)")
    m = ema.module
    m.eval()
    return m


@torch.no_grad()
def predict(model, bank, clips, version="clean"):
    """Clip-level probabilities: the mean of the per-step probabilities over the clip's voiced steps."""
    model.eval()
    out = []
    for c in clips:
        i = bank.find(c, version)
        f, v = bank.features(i), bank.voiced_of(i)
        if v.size == 0:
            out.append(None)
            continue
        out.append(B.voiced_mean(model(torch.from_numpy(f.astype(np.float32))[None])[0].numpy(), v))
    return out


def scores(task, ys, probs):
    """Accuracy, UAR and per-class recall of clip decisions."""
    cls = SD.CLASSES[task]
    keep = [k for k, p in enumerate(probs) if p is not None]
    y = np.array([ys[k] for k in keep])
    p = np.array([int(np.argmax(probs[k])) for k in keep])
    rec = {cls[k]: round(float((p[y == k] == k).mean()), 4) for k in range(len(cls)) if (y == k).any()}
    return {"n": int(y.size), "accuracy": round(float((y == p).mean()), 4) if y.size else None,
            "uar": round(float(np.mean(list(rec.values()))), 4) if rec else None, "recall": rec}


def heldout_report(task, val, clip_probs):
    """metrics.json: scores of the held-out (clip, y) pairs `val`, clean and through the telephone channel, overall
    and per source; `clip_probs(clips, version)` gives the model's clip probabilities."""
    res = {}
    for version in ("clean", "phone"):
        probs = clip_probs([c for c, _ in val], version)
        res[version] = {"overall": scores(task, [y for _, y in val], probs), "per_source": {}}
        for src in sorted({c.source for c, _ in val}):
            k = [j for j, (c, _) in enumerate(val) if c.source == src]
            res[version]["per_source"][src] = scores(task, [val[j][1] for j in k], [probs[j] for j in k])
    return res


def run(args: SpeakerRecipe, out_root: str, clips=None, version: str | None = None, write_validation: bool = False,
        reproduce: str | None = None):
    """Trains the recipe on the training speakers of `clips` (default: clips.csv), scores the held-out speakers and
    exports <out_root>/<task>/; returns the folder."""
    from training.export.onnx import export
    clips = clips if clips is not None else D.load_clips()
    if write_validation:  # the shipped model's validation list, for `auris eval`; an experiment's run leaves it alone
        SD.write_validation_csv(args.task, clips, os.path.join(D.HERE, "validation"))
    bank = training_bank(clips, args.distill or args.embed_steps > 0, args.variants > 0)
    items = SD.training_items(SD.clips_of(args.task, clips, split_name="train"), args.leave_out_emotions,
                              args.speaker_fraction)
    if args.distill:  # teacher targets on unlabelled speech (distill.py)
        from training.data.distill import distill_items
        items += distill_items(clips)
    model = train(bank, items, args, log=lambda s: print(s, flush=True))
    val = SD.clips_of(args.task, clips, split_name="val")
    res = heldout_report(args.task, val, lambda clips, version: predict(model, bank, clips, version))
    print(json.dumps(res, indent=1), flush=True)
    return export(args, model, clips, res, out_root, version, reproduce)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", choices=SD.TASKS, help="required without --recipe")
    ap.add_argument("--out", default=None, help="folder that gets <task>/ (default: training/runs/<task>)")
    ap.add_argument("--threads", type=int, default=2)
    add_arguments(ap, SpeakerRecipe)
    add_recipe_arguments(ap)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    version = reproduce = None
    if a.recipe:
        step = recipe_step(a.recipe, a.step)
        r, version = from_dict(SpeakerRecipe, step["hyperparameters"]), step["version"]
        reproduce = step_command("training.recipes.speaker", a.recipe, step["name"])
    elif a.task:
        r = from_args(SpeakerRecipe, a)
    else:
        ap.error("--task or --recipe")
    run(r, a.out or os.path.join(D.HERE, "runs", r.task), version=version, reproduce=reproduce)


if __name__ == "__main__":
    main()
