"""The longform recipe: speech 1.x, gender 1.x's members and arousal 1.0.x.  Long-form examples synthesised from
clips (data/augment.Synth: concatenated clips over music or noise, gain, reverb, codecs) are cached as features, and a
network is trained on them (EMA of the weights), validated (validate/evaluation.py) and exported with its card.
Every hyperparameter is a field of recipes/config.LongformRecipe.

    python -m training.recipes.longform --task speech --out training/runs/speech       # one run
    python -m training.rebuild speech        # = python -m training rebuild speech: the shipped recipe file, checked
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from multiprocessing import Pool

import numpy as np
import torch
import torch.nn.functional as F

from training.data import augment as A
from training.data import clips as D
from training.data.voice_variants import VARIANT_TASKS
from training.export.onnx import export_onnx, manifest_head, model_section
from training.models.net import Net
from training.recipes.config import (LongformRecipe, add_arguments, add_recipe_arguments, command, from_args, from_dict,
                                     recipe_step, step_command)
from training.recipes.train_step import weighted_step
from training.validate.evaluation import CLASSES, evaluate, summary_metrics, val_set

# The decay of the weight average that is evaluated and exported is LongformRecipe.ema (default per task: 0 = the final
# weights, gender 0.998; speech and arousal 1.0.0 were trained before the average existed; arousal with it was no
# better: seeds 2/3 gave 0.543/0.558).


# ---------------------------------------------------------------- caches
_SYNTH = None


def _make_batch(job):
    n, seed = job
    return A.make_batch((_SYNTH, n, seed))


SHARD = 2000


def feature_cache(task, clips, store, n, seed, steps=64, workers=2, use_variants=True, high_p=A.GENDER_HIGH_AROUSAL_P):
    """Augmented feature cache, built in shards of SHARD examples (a larger n reuses the earlier shards)."""
    os.makedirs(D.CACHE, exist_ok=True)
    global _SYNTH  # the synthesiser of this cache, inherited by the forked workers (not pickled); not an option
    variants = None
    if use_variants and task in VARIANT_TASKS:
        from training.data.voice_variants import build as build_variants
        variants = build_variants(clips, store, task=task, workers=workers)
    _SYNTH = A.Synth(A.Pools(clips, "train"), store, task, steps, variants, high_p=high_p)
    # bump when the synthesis for a task changes, never reuse a number (arousal v6 was a rejected URDU-split cache;
    # arousal v7 / gender v7 were the rejected codec round trips, see augment.CODEC_TASKS)
    ver = {"arousal": "v5", "gender": "v6"}.get(task, "v5")
    if variants is not None:  # the variant recipe is part of the key (a stale cache once hid a missing change)
        from training.data import voice_variants as V
        ver += f"|variants {V.recipe(task)} p={A.VARIANT_P}"
    if task == "gender" and high_p != 0.4:  # keyed only when changed: the shipped caches stay valid
        ver += f"|high_p={high_p}"
    key = hashlib.sha1(f"{task}|{seed}|{steps}|{D.rows_sha256(clips)}|{ver}".encode()).hexdigest()[:12]
    Xs, Ys, Ws = [], [], []
    for sh in range((n + SHARD - 1) // SHARD):
        m = min(SHARD, n - sh * SHARD)
        fn = os.path.join(D.CACHE, f"feats_{task}_{key}_{sh:03d}_{m}.npz")
        if not os.path.exists(fn):
            t = time.time()
            chunk = 100
            jobs = [(min(chunk, m - i), (seed * 1000 + sh) * 100003 + i) for i in range(0, m, chunk)]
            with Pool(workers) as p:
                parts = p.map(_make_batch, jobs, chunksize=1)
            tmp = fn[:-4] + f".tmp{os.getpid()}.npz"
            np.savez(tmp, X=np.concatenate([q[0] for q in parts]), Y=np.concatenate([q[1] for q in parts]),
                     W=np.concatenate([q[2] for q in parts]))
            os.replace(tmp, fn)  # atomic: concurrent runs never read a partial shard
            print(f"[{task}] built shard {sh} ({m} examples) in {time.time() - t:.0f}s", flush=True)
        z = np.load(fn)
        Xs.append(z["X"]); Ys.append(z["Y"]); Ws.append(z["W"])
    return np.concatenate(Xs), np.concatenate(Ys), np.concatenate(Ws)


# ---------------------------------------------------------------- training
def jitter(xb: torch.Tensor) -> torch.Tensor:
    """Extra gain/offset jitter of a batch of log-mel features in the log domain (gain invariance) and light
    SpecAugment (one band of 1-7 mels set to the batch mean, half the time)."""
    xb = xb + (torch.rand(xb.shape[0], 1, 1) * 20 - 10) * 0.2303 * (xb > -18).float()
    if torch.rand(1).item() < 0.5:
        f0 = int(torch.randint(0, 56, (1,)))
        xb[:, :, f0:f0 + int(torch.randint(1, 8, (1,)))] = xb.mean()
    return xb


def ordinal_targets(task, x):
    """Soft targets for arousal as an ordered scale (low < neutral < high): high and low give `x` of their mass to
    neutral, neutral gives x/2 to each side, so confusing low with high costs more than either with neutral."""
    if task != "arousal":
        raise SystemExit("--ordinal is for arousal only")
    cls = CLASSES[task]
    h, lo, n = cls.index("high"), cls.index("low"), cls.index("neutral")
    t = torch.zeros(len(cls), len(cls))
    t[h, h], t[h, n] = 1 - x, x
    t[lo, lo], t[lo, n] = 1 - x, x
    t[n, n], t[n, h], t[n, lo] = 1 - x, x / 2, x / 2
    return t


def train_task(r: LongformRecipe, clips, store, outdir, version="1.0.0", quick=False, workers=2, reproduce=None):
    """Trains recipe `r` and exports <outdir>/<task>/ (model, manifest, metrics, card); returns the validation report."""
    task = r.task
    clips = r.clip_table(clips)
    torch.manual_seed(r.seed)
    np.random.seed(r.seed)
    n, epochs = r.examples, r.epochs
    X, Y, W = feature_cache(task, clips, store, n, r.seed, workers=workers, use_variants=r.variants, high_p=r.gender_high_p)
    vs = val_set(task, clips, store, quick=quick)
    cfg = r.model_config()
    model = Net(len(CLASSES[task]), **cfg)
    Xt, Yt, Wt = torch.from_numpy(X), torch.from_numpy(Y.astype(np.int64)), torch.from_numpy(W.astype(np.float32))
    bs = 64
    steps_per_epoch = (len(X) + bs - 1) // bs
    opt = torch.optim.AdamW(model.parameters(), lr=r.lr, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=r.lr, total_steps=epochs * steps_per_epoch, pct_start=0.15)
    g = torch.Generator().manual_seed(r.seed)
    # exponential moving average of the weights (and BN statistics): validation swung by +-2 points
    # between epochs; the average is what gets evaluated and exported
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(r.ema_decay()), use_buffers=True)
    soft = ordinal_targets(task, r.ordinal) if r.ordinal else None
    history = []
    for ep in range(epochs):
        model.train()
        t0, tot, cnt = time.time(), 0.0, 0.0
        perm = torch.randperm(len(X), generator=g)
        for i in range(steps_per_epoch):
            idx = perm[i * bs:(i + 1) * bs]
            xb = Xt[idx].float()
            yb, wb = Yt[idx], Wt[idx]
            xb = jitter(xb)
            logits = model.logits(xb)  # [B, C, S]
            w = wb * (yb >= 0).float()
            if soft is not None:  # [C, C] soft target per class (--ordinal)
                loss = -(soft[yb.clamp(min=0)].permute(0, 2, 1) * F.log_softmax(logits, dim=1)).sum(dim=1)
            else:
                loss = F.cross_entropy(logits, yb.clamp(min=0), reduction="none", label_smoothing=0.05)
            t, c = weighted_step(model, ema, opt, sched, loss, w)
            tot += t
            cnt += c
        res = evaluate(ema.module, task, vs)
        o = res["overall"]
        extra = ""
        if task == "arousal":
            extra = f" in-corpus UAR {res['in_corpus_heldout_speakers']['clip_balanced_accuracy']:.3f}" \
                    f" urdu UAR {res['cross_corpus_urdu']['clip_balanced_accuracy'] if res['cross_corpus_urdu'] else float('nan'):.3f}"
        print(f"[{task}] epoch {ep + 1}/{epochs} loss {tot / max(cnt, 1):.4f} val clip-bal-acc {o['clip_balanced_accuracy']:.3f}"
              f" clip-acc {o['clip_accuracy']:.3f} step-bal-acc {o['step_balanced_accuracy']:.3f}{extra} ({time.time() - t0:.0f}s)", flush=True)
        history.append({"epoch": ep + 1, "loss": round(tot / max(cnt, 1), 4), "val": o})
    model = ema.module
    model.eval()
    final = evaluate(model, task, vs)
    export(r, model, clips, final, outdir, version, quick, reproduce)
    return final


# ---------------------------------------------------------------- export
def export(r: LongformRecipe, model, clips, res, outdir, version, quick=False, reproduce=None):
    from training.export.onnx import write_model_dir
    task = r.task
    d = os.path.join(outdir, task)
    os.makedirs(d, exist_ok=True)
    fn = os.path.join(d, "model.onnx")
    cfg = r.model_config()
    diff = export_onnx(model, fn, len(CLASSES[task]))
    used = [c for c in clips if D.task_label(task, c) is not None]
    manifest = manifest_head(task, version, CLASSES[task], cfg, used)
    manifest["metrics"] = summary_metrics(task, res)
    manifest["model"] = model_section(model, cfg, diff, width=False)
    manifest["training"] = {"examples": r.examples, "epochs": r.epochs, "seed": r.seed, "quick": bool(quick),
                            "ema": r.ema_decay(), "cfg": json.dumps(r.cfg) if r.cfg else None, "lr": r.lr,
                            "variants": task in VARIANT_TASKS and r.variants, "reproduce": reproduce or command(r),
                            # the sources it learnt from: clips.csv grows, and the card must keep naming these alone
                            "sources": sorted({c.source for c in used})}
    write_model_dir(task, d, manifest, res, clips)
    m = manifest["model"]
    print(f"[{task}] exported {fn} ({os.path.getsize(fn) / 1024:.0f} KB, {m['parameters']} params, "
          f"{m['macs_per_step']} MACs/step, context {manifest['context']}, onnx diff {diff:.1e})", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", choices=list(CLASSES), help="required without --recipe")
    ap.add_argument("--out", default=None, help="folder that gets <task>/ (default: training/runs/<task>)")
    ap.add_argument("--version", default="1.0.0", help="the manifest's version")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2, help="processes for building the augmented cache")
    ap.add_argument("--cache-only", action="store_true", help="only build the augmented feature cache")
    add_arguments(ap, LongformRecipe)
    add_recipe_arguments(ap)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    reproduce = None
    if a.recipe:
        step = recipe_step(a.recipe, a.step)
        r, a.version = from_dict(LongformRecipe, step["hyperparameters"]), step["version"]
        reproduce = step_command("training.recipes.longform", a.recipe, step["name"])
    elif a.task:
        r = from_args(LongformRecipe, a)
    else:
        ap.error("--task or --recipe")
    clips = D.load_clips()
    store = D.AudioStore(clips)
    if a.cache_only:
        feature_cache(r.task, clips, store, r.examples, r.seed, workers=a.workers, use_variants=r.variants,
                      high_p=r.gender_high_p)
        return
    train_task(r, clips, store, a.out or os.path.join(D.HERE, "runs", r.task), a.version, workers=a.workers,
               reproduce=reproduce)


if __name__ == "__main__":
    main()
