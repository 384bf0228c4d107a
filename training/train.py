"""Train, validate and export the auris models.

    python -m training.train --all            # full run, writes models/<task>/
    python -m training.train --all --quick    # smoke test (few minutes), writes training/runs/quick/
    python -m training.train --task gender --examples 30000 --epochs 12
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

from . import augment as A
from . import data as D
from . import ensemble
from .card import write_model_dir
from .evaluation import CLASSES, VOICED_DBFS, evaluate, recall_table, summary_metrics, val_set  # noqa: F401 (public names of training.train)
from .model import CONFIGS, Net, context_steps, fold_lifter, macs_per_step
from .voice_variants import VARIANT_TASKS

ROOT = os.path.dirname(D.HERE)
# gender 1.1.0: URDU speaker-disjoint in training/validation; 1.2.0: ensemble (see ENSEMBLES)
MODEL_VERSION = {"gender": "1.2.0", "speech": "1.1.0"}  # speech 1.1.0: MP3 / resampling round trips
# Tasks shipped as an ensemble merged into one file (training/ensemble.py): per member, the overrides of the
# command-line defaults.  gender: 1.1.0's recipe (pitch-heavy) + the WORLD-variant recipe (envelope-heavy).
ENSEMBLES = {"gender": [{"no_variants": True, "ema": 0.0}, {}]}
# (synthetic examples, epochs) of the shipped models
TASK_DEFAULTS = {"speech": (20000, 12), "gender": (20000, 12), "arousal": (20000, 12)}
# decay of the weight average that is evaluated and exported; 0 = the final weights (speech and arousal 1.0.0
# were trained before the average existed; arousal with it was no better: seeds 2/3 gave 0.543/0.558)
EMA_DEFAULT = {"gender": 0.998}


def ema_decay(task, args):
    return args.ema if args.ema is not None else EMA_DEFAULT.get(task, 0.0)


# ---------------------------------------------------------------- caches
_SYNTH = None


def _make_batch(job):
    n, seed = job
    return A.make_batch((_SYNTH, n, seed))


SHARD = 2000


def feature_cache(task, clips, store, n, seed, steps=64, workers=2, use_variants=True):
    """Augmented feature cache, built in shards of SHARD examples (a larger n reuses the earlier shards)."""
    os.makedirs(D.CACHE, exist_ok=True)
    global _SYNTH
    variants = None
    if use_variants and task in VARIANT_TASKS:
        from .voice_variants import build as build_variants
        variants = build_variants(clips, store, task=task, workers=workers)
    _SYNTH = A.Synth(A.Pools(clips, "train"), store, task, steps, variants)  # inherited by forked workers, not pickled
    # bump when the synthesis for a task changes, never reuse a number (arousal v6 was a rejected URDU-split cache;
    # arousal v7 / gender v7 were the rejected codec round trips, see augment.CODEC_TASKS)
    ver = {"arousal": "v5", "gender": "v6"}.get(task, "v5")
    if variants is not None:  # the variant recipe is part of the key (a stale cache once hid a missing change)
        from . import voice_variants as V
        ver += f"|variants {V.recipe(task)} p={A.VARIANT_P}"
    if task == "gender" and A.GENDER_HIGH_AROUSAL_P != 0.4:  # keyed only when changed: the shipped caches stay valid
        ver += f"|high_p={A.GENDER_HIGH_AROUSAL_P}"
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


def weighted_step(model, ema, opt, sched, loss, w):
    """One optimiser step on the per-step losses weighted by `w` (voiced, labelled steps), then the weight average;
    returns (weighted loss sum, weight) for the epoch's mean loss."""
    loss = (loss * w).sum() / w.sum().clamp(min=1.0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    ema.update_parameters(model)
    return float(loss.detach()) * float(w.sum()), float(w.sum())


def train_task(task, clips, store, args, outdir):
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    n = args.examples or (1200 if args.quick else TASK_DEFAULTS[task][0])
    epochs = args.epochs or (1 if args.quick else TASK_DEFAULTS[task][1])
    X, Y, W = feature_cache(task, clips, store, n, args.seed, workers=args.workers, use_variants=not args.no_variants)
    vs = val_set(task, clips, store, quick=args.quick)
    cfg = dict(CONFIGS[task])
    if args.cfg:
        cfg.update(json.loads(args.cfg))
        CONFIGS[task] = cfg
    model = Net(len(CLASSES[task]), **cfg)
    Xt, Yt, Wt = torch.from_numpy(X), torch.from_numpy(Y.astype(np.int64)), torch.from_numpy(W.astype(np.float32))
    bs = 64
    steps_per_epoch = (len(X) + bs - 1) // bs
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=epochs * steps_per_epoch, pct_start=0.15)
    g = torch.Generator().manual_seed(args.seed)
    # exponential moving average of the weights (and BN statistics): validation swung by +-2 points
    # between epochs; the average is what gets evaluated and exported
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(ema_decay(task, args)), use_buffers=True)
    soft = ordinal_targets(task, args.ordinal) if getattr(args, "ordinal", 0) else None
    history = []
    for ep in range(epochs):
        model.train()
        t0, tot, cnt = time.time(), 0.0, 0.0
        perm = torch.randperm(len(X), generator=g)
        for i in range(steps_per_epoch):
            idx = perm[i * bs:(i + 1) * bs]
            xb = Xt[idx].float()
            yb, wb = Yt[idx], Wt[idx]
            # extra gain/offset jitter in the log domain (gain invariance) and light SpecAugment
            xb = xb + (torch.rand(xb.shape[0], 1, 1) * 20 - 10) * 0.2303 * (xb > -18).float()
            if torch.rand(1).item() < 0.5:
                f0 = int(torch.randint(0, 56, (1,)))
                xb[:, :, f0:f0 + int(torch.randint(1, 8, (1,)))] = xb.mean()
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
    export(task, model, clips, final, outdir, args, n, epochs)
    return final


# ---------------------------------------------------------------- export
def export(task, model, clips, res, outdir, args, n_examples, epochs):
    import onnx
    import onnxruntime as ort
    d = os.path.join(outdir, task)
    os.makedirs(d, exist_ok=True)
    fn = os.path.join(d, "model.onnx")
    model.eval()
    fold_lifter(model)
    dummy = torch.randn(1, 64, 64)
    torch.onnx.export(model, (dummy,), fn, input_names=["features"], output_names=["probs"], opset_version=17,
                      dynamic_axes={"features": {0: "B", 1: "T"}, "probs": {0: "B", 1: "S"}}, dynamo=False,
                      do_constant_folding=True)
    onnx.checker.check_model(onnx.load(fn))
    sess = ort.InferenceSession(fn, providers=["CPUExecutionProvider"])
    maxdiff = 0.0
    for B, S in ((1, 1), (2, 7), (1, 150)):
        x = torch.randn(B, 4 * S, 64) * 3 - 5
        with torch.no_grad():
            ref = model(x).numpy()
        out = sess.run(["probs"], {"features": x.numpy()})[0]
        assert out.shape == (B, S, len(CLASSES[task])), out.shape
        maxdiff = max(maxdiff, float(np.abs(out - ref).max()))
    assert maxdiff < 1e-4, maxdiff
    cfg = CONFIGS[task]
    left, right = context_steps(cfg["norm_k"], cfg["dil"], cfg.get("norm", "mean"))
    used = [c for c in clips if D.task_label(task, c) is not None]
    params = sum(p.numel() for p in model.parameters())
    manifest = {
        "name": task,
        "version": MODEL_VERSION.get(task, "1.0.0"),
        "placeholder": False,
        "file": "model.onnx",
        "input": "features",
        "output": "probs",
        "raw_keys": CLASSES[task],
        "features": {"kind": "logmel", "sample_rate": 16000, "n_fft": 512, "hop": 256, "n_mels": 64,
                     "fmin": 50, "fmax": 8000, "log_floor": 1e-8, "frames_per_step": 4},
        "context": {"left_steps": left, "right_steps": right},
        "receptive_field_ms": (left + right + 1) * 64,
        "lookahead_ms": right * 64 + 8,
        "training_data_sha256": D.rows_sha256(used),
        "metrics": summary_metrics(task, res),
        "model": {"parameters": params, "macs_per_step": macs_per_step(model), "onnx_opset": 17,
                  "architecture": f"gain-norm({cfg.get('norm', 'mean')} over {cfg['norm_k']} frames) + 2 frame convs + maxpool4 + "
                                  f"dilated residual convs {list(cfg['dil'])}",
                  "onnx_vs_torch_max_abs_diff": maxdiff},
        "training": {"examples": n_examples, "epochs": epochs, "seed": args.seed, "quick": bool(args.quick),
                     "ema": ema_decay(task, args), "cfg": args.cfg, "lr": args.lr,
                     "variants": task in VARIANT_TASKS and not args.no_variants, "reproduce": reproduce_cmd(task, args),
                     # the sources it learnt from: clips.csv grows, and the card must keep naming these alone
                     "sources": sorted({c.source for c in used})},
    }
    write_model_dir(task, d, manifest, res, clips)
    print(f"[{task}] exported {fn} ({os.path.getsize(fn) / 1024:.0f} KB, {params} params, "
          f"{macs_per_step(model)} MACs/step, context {left}/{right}, onnx diff {maxdiff:.1e})", flush=True)


def reproduce_cmd(task, args):
    """The command line that trains this one model again."""
    cmd = f"python -m training.train --task {task}" + (" --single" if task in ENSEMBLES else "")
    if args.no_variants and task in VARIANT_TASKS:
        cmd += " --no-variants"
    for flag, val, default in (("--ema", ema_decay(task, args), EMA_DEFAULT.get(task, 0.0)), ("--seed", args.seed, 1),
                               ("--lr", args.lr, 3e-3),
                               ("--examples", args.examples, None), ("--epochs", args.epochs, None)):
        if val != default:
            cmd += f" {flag} {val:g}"
    if getattr(args, "gender_high_p", None) is not None and task == "gender":
        cmd += f" --gender-high-p {args.gender_high_p}"
    if getattr(args, "ordinal", 0) and task == "arousal":
        cmd += f" --ordinal {args.ordinal}"
    return cmd + (f" --cfg '{args.cfg}'" if args.cfg else "") + (" --quick" if args.quick else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--task", action="append", choices=list(CLASSES))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--examples", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2, help="processes for building the augmented cache")
    ap.add_argument("--cache-only", action="store_true", help="only build the augmented feature caches")
    ap.add_argument("--cfg", default=None, help="JSON overrides of the model config, e.g. '{\"c2\": 96}'")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--gender-high-p", type=float, default=None, help="gender: share of draws from high-arousal clips (default 0.4)")
    ap.add_argument("--ordinal", type=float, default=0.0, help="arousal: ordinal soft targets (mass moved to the neighbour class)")
    ap.add_argument("--no-variants", action="store_true", help="train without the WORLD voice variants")
    ap.add_argument("--single", action="store_true", help="train one model even for a task shipped as an ensemble")
    ap.add_argument("--ema", type=float, default=None,
                    help="decay of the weight average that is evaluated and exported (default per task: EMA_DEFAULT)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.gender_high_p is not None:
        A.GENDER_HIGH_AROUSAL_P = args.gender_high_p
    tasks = list(CLASSES) if args.all or not args.task else args.task
    out = args.out or (os.path.join(D.HERE, "runs", "quick") if args.quick else os.path.join(ROOT, "models"))
    clips = D.load_clips()
    store = D.AudioStore(clips)
    print("validation csvs:", D.write_validation_csvs(clips, os.path.join(D.HERE, "validation")), flush=True)
    for t in tasks:
        if args.cache_only:
            feature_cache(t, clips, store, args.examples or TASK_DEFAULTS[t][0], args.seed, workers=args.workers,
                          use_variants=not args.no_variants)
            continue
        if t in ENSEMBLES and not args.quick and not args.single:
            train_ensemble(t, clips, store, args, out)
        else:
            train_task(t, clips, store, args, out)


def train_ensemble(task, clips, store, args, out):
    """Train each member into training/runs/<task>_members/<i>/, then merge them into <out>/<task>/."""
    import copy
    members = []
    for i, over in enumerate(ENSEMBLES[task]):
        a = copy.copy(args)
        for k, v in over.items():
            setattr(a, k, v)
        d = os.path.join(D.HERE, "runs", f"{task}_members", str(i + 1))
        print(f"[{task}] ensemble member {i + 1}/{len(ENSEMBLES[task])}: {over or 'defaults'}", flush=True)
        train_task(task, clips, store, a, d)
        members.append(d)
    ensemble.build(task, members, out, MODEL_VERSION.get(task, "1.0.0"))


if __name__ == "__main__":
    main()
