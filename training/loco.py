"""Leave-one-corpus-out validation of the speaker models, with stress slices, beside the shipped models.

    python -m training.loco --task gender --jobs 2          # trains one model per held-out corpus, then reports
    python -m training.loco --task gender --report-only     # re-reads the fold predictions
    npm run eval:loco -- --task arousal                      # the same, from the repository's scripts

For each corpus X: a model is trained with the shipped recipe (speaker_train.py) on the training speakers of
every other corpus, and scores every clip of X, as recorded (`clean`) and through a telephone channel with a
real codec (`phone`, bank.py).  Nothing of X is seen in training or in any choice made here, so the figures
estimate what a user with a new kind of recording gets.  Slices, each on its own:
- telephone: every held-out clip through G.711 mu-law/A-law, GSM, Speex, Codec2 or G.726 at 8 kHz (300-3400 Hz,
  0-6 % packet loss), per codec too;
- gender x arousal cells (low-arousal women, high-arousal men, ...), from the held-out predictions;
- unseen languages: each held-out corpus is its own language or accent;
- gender only: pitch moved towards the other gender with the spectral envelope kept (WORLD), which must not
  flip the decision.
The previous versions in git (PREVIOUS_REV's models/<task>/model.onnx) are scored on the same clips where they never saw
the corpus, and on the held-out speakers of the corpora they were trained on.
Writes training/runs/loco/<task>/<corpus>.npz per fold and models/<task>/loco.json (read by the model card).
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
from multiprocessing import Pool

import numpy as np

from . import bank as B
from . import data as D
from . import label_audit
from . import speaker_data as SD
from . import speaker_train as ST

RUNS = os.path.join(D.HERE, "runs", "loco")
ROOT = os.path.dirname(D.HERE)
PITCH_CLIPS = 30  # per gender and held-out corpus


def set_runs(path):
    """Where fold files go (an experiment keeps its folds apart from the shipped recipe's)."""
    global RUNS
    RUNS = path


def corpora_of(task, clips):
    return sorted({c.source for c in clips if SD.label(task, c) is not None})


def _fold(job):
    """Train without `corpus`, score all of its clips (clean, phone, and for gender pitch-moved variants)."""
    import torch
    task, corpus, hp = job
    set_runs(hp.pop("runs"))
    torch.set_num_threads(1)
    clips = D.load_clips()
    distill = hp.pop("distill", False)
    bank = ST.training_bank(clips, distill or hp.get("embed_steps", 0) > 0, hp.get("variants", 0.0) > 0)
    others = training_corpora(corpus, hp.pop("corpora_count", 0), corpora_of(task, clips))
    items = SD.training_items(SD.clips_of(task, clips, corpora=others, split_name="train"))
    if distill:  # teacher targets on unlabelled speech, from a probe that never saw this corpus' labels
        from .distill import distill_items
        items += distill_items(clips, exclude=(corpus,))
    args = argparse.Namespace(**hp)
    logf = open(os.path.join(RUNS, task, f"{corpus}.log"), "w")
    model = ST.train(task, bank, items, args, log=lambda s: (logf.write(s + "\n"), logf.flush()))
    held = SD.clips_of(task, clips, corpora=[corpus])
    out = {"idx": np.array([c.idx for c, _ in held]), "y": np.array([y for _, y in held])}
    for version in ("clean", "phone"):
        out[version] = np.stack([p if p is not None else np.full(len(SD.CLASSES[task]), np.nan)
                                 for p in ST.predict(model, bank, [c for c, _ in held], version)])
    if task == "gender":
        out.update(pitch_slice(model, clips, held))
    torch.save(model.state_dict(), os.path.join(RUNS, task, f"{corpus}.pt"))
    np.savez(os.path.join(RUNS, task, f"{corpus}.npz"), **out)
    return corpus


def training_corpora(held: str, count: int = 0, labelled=SD.CORPORA):
    """The corpora a fold learns from: every other one with the task's labels (`labelled`), or (count > 0, a curve
    over corpora) a fixed random `count` of them, drawn from the held-out corpus' name so each fold's draw is the
    same in every run."""
    others = [c for c in SD.CORPORA if c != held and c in labelled]
    if 0 < count < len(others):
        rng = np.random.default_rng(int(hashlib.md5(f"{held}:{count}".encode()).hexdigest()[:8], 16))
        others = sorted(others[k] for k in rng.permutation(len(others))[:count])
    return others


def pitch_variants(clips, held, seed=3):
    """WORLD re-syntheses of PITCH_CLIPS clips per gender: F0 moved towards the other gender (men x1.5-1.8,
    women x0.6-0.7), spectral envelope kept."""
    from .voice_variants import make_variants
    rng = np.random.default_rng(seed)
    store = D.AudioStore(clips)
    out = []
    for g, ratio in ((0, (0.6, 0.7)), (1, (1.5, 1.8))):  # female down, male up
        pool = [c for c, y in held if y == g]
        for c in [pool[k] for k in rng.permutation(len(pool))[:PITCH_CLIPS]]:
            x16 = np.clip(np.round(store.get(c) * 32767), -32768, 32767).astype(np.int16)
            vs = make_variants((x16, [ratio], 0.0, int(rng.integers(1 << 30))))
            if vs:
                out.append((c, g, vs[0].astype(np.float32) / 32768.0))
    return out


def pitch_slice(model, clips, held):
    import torch
    from .features import logmel_fast
    idx, ys, probs = [], [], []
    for c, g, x in pitch_variants(clips, held):
        v = B.voiced_steps(x)
        with torch.no_grad():
            p = model(torch.from_numpy(logmel_fast(x))[None])[0].numpy()
        probs.append(B.voiced_mean(p, v))
        idx.append(c.idx)
        ys.append(g)
    return {"pitch_idx": np.array(idx), "pitch_y": np.array(ys), "pitch": np.array(probs)}


# ------------------------------------------------------------------------------------------ report
def _scores(task, y, p):
    ok = ~np.isnan(p).any(axis=1)
    return ST.scores(task, list(y[ok]), list(p[ok]))


# the last commit that shipped gender 1.2.0 and arousal 1.0.0 (the models 2.0 replaces)
PREVIOUS_REV = "c22f1e0"


def shipped_model_path(task, name="model.onnx"):
    """The previous version's file of the task (model.onnx or manifest.json), extracted from git once; None for
    a task without a previous version."""
    fn = os.path.join(RUNS, f"shipped_{task}.{'onnx' if name == 'model.onnx' else 'manifest.json'}")
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


def cells(task, clips_by_idx, idx, y, p):
    """Gender x arousal (and emotion) cells of the held-out predictions."""
    out = {}
    if task == "gender":
        groups = {"low-arousal women": lambda c, g: g == 0 and c.arousal == "low",
                  "high-arousal men": lambda c, g: g == 1 and c.arousal == "high",
                  "high-arousal women": lambda c, g: g == 0 and c.arousal == "high",
                  "low-arousal men": lambda c, g: g == 1 and c.arousal == "low",
                  "sad women": lambda c, g: g == 0 and c.emotion in ("sad", "sadness"),
                  "angry men": lambda c, g: g == 1 and c.emotion in ("angry", "anger")}
    else:
        genders = {"women": "female", "men": "male"}
        groups = {name: (lambda c, g, gg=gg: c.gender == gg) for name, gg in genders.items()}
    for name, f in groups.items():
        m = np.array([f(clips_by_idx[i], g) for i, g in zip(idx, y)])
        if m.any():
            out[name] = _scores(task, y[m], p[m])
    return out


def report(task, clips, bank):
    by_idx = {c.idx: c for c in clips}
    folds, pooled = {}, {v: ([], [], []) for v in ("clean", "phone")}
    flagged = label_audit.flagged_speakers() if task == "gender" else set()
    pitch = ([], [])
    for corpus in corpora_of(task, clips):
        fn = os.path.join(RUNS, task, f"{corpus}.npz")
        if not os.path.exists(fn):
            continue
        z = np.load(fn)
        spk = {by_idx[i].speaker for i in z["idx"]}
        folds[corpus] = {"speakers": len(spk), "clean": _scores(task, z["y"], z["clean"]),
                         "phone": _scores(task, z["y"], z["phone"])}
        keep = np.array([by_idx[i].speaker not in flagged for i in z["idx"]], dtype=bool)
        if task == "gender" and not keep.all():  # the same fold without the speakers the label audit flags
            folds[corpus]["audited"] = {"flagged_speakers": len({by_idx[i].speaker for i in z["idx"][~keep]}),
                                        "clean": _scores(task, z["y"][keep], z["clean"][keep]),
                                        "phone": _scores(task, z["y"][keep], z["phone"][keep])}
        for v in pooled:
            pooled[v][0].extend(z["idx"]); pooled[v][1].extend(z["y"]); pooled[v][2].extend(z[v])
        if "pitch" in z and len(z["pitch"]):
            folds[corpus]["pitch_moved"] = _scores(task, z["pitch_y"], z["pitch"])
            pitch[0].extend(z["pitch_y"]); pitch[1].extend(z["pitch"])
    idx, y, p = (np.array(a) for a in pooled["clean"])
    rep = {"task": task, "classes": SD.CLASSES[task], "folds": folds,
           "pooled_clean": _scores(task, y, p), "cells": cells(task, by_idx, idx, y, p)}
    pidx, py, pp = (np.array(a) for a in pooled["phone"])
    rep["telephone"] = {"all": _scores(task, py, pp)}
    if flagged:
        keep = np.array([by_idx[i].speaker not in flagged for i in idx], dtype=bool)
        rep["audited"] = {"flagged_speakers": sorted(flagged), "pooled_clean": _scores(task, y[keep], p[keep]),
                          "telephone": _scores(task, py[keep], pp[keep])}
    codec = {int(c): str(k) for c, k in zip(bank.clip_idx, bank.codec) if k}
    for k in sorted(set(codec.values())):
        m = np.array([codec.get(int(i)) == k for i in pidx])
        rep["telephone"][k] = _scores(task, py[m], pp[m])
    rep["telephone_cells"] = cells(task, by_idx, pidx, py, pp)
    if pitch[0]:
        rep["pitch_moved"] = _scores(task, np.array(pitch[0]), np.array(pitch[1]))
    rep["shipped"] = shipped_report(task, clips, bank)
    return rep


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
            out[corpus][v] = _scores(task, y, p)
            if not seen:
                unseen[v][0].extend(c.idx for c, _ in held); unseen[v][1].extend(y); unseen[v][2].extend(p)
    pooled = {}
    for v, (idx, y, p) in unseen.items():
        if idx:
            idx, y, p = np.array(idx), np.array(y), np.array(p)
            pooled[v] = {"all": _scores(task, y, p), "cells": cells(task, by_idx, idx, y, p)}
    return {"per_corpus": out, "unseen_corpora": sorted(c for c, r in out.items() if r["clips"] == "all"), "pooled_unseen": pooled}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True, choices=SD.TASKS)
    ap.add_argument("--corpora", default=None, help="comma-separated subset of the held-out corpora")
    ap.add_argument("--jobs", type=int, default=2, help="folds trained at once (one thread each)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--examples", type=int, default=ST.DEFAULTS["examples"])
    ap.add_argument("--epochs", type=int, default=ST.DEFAULTS["epochs"])
    ap.add_argument("--out", default=os.path.join(ROOT, "models"), help="folder whose <task>/loco.json gets the report")
    ap.add_argument("--cfg", default=None, help="JSON overrides of the model config (an experiment's recipe)")
    ap.add_argument("--runs", default=RUNS, help="folder for the fold files (<runs>/<task>/<corpus>.*)")
    ap.add_argument("--distill", action="store_true", help="gender: add teacher-labelled speech (distill.py)")
    ap.add_argument("--dvec", type=float, default=0.0, help="weight of the speaker-encoder (d-vector) distillation loss")
    ap.add_argument("--variants", type=float, default=0.0, help="gender: share of examples made of WORLD voice variants")
    ap.add_argument("--embed-steps", type=int, default=0, help="gender: steps of speaker-encoder regression before the labels")
    ap.add_argument("--embed-then", choices=("head", "probe", "finetune"), default="head", help="after --embed-steps")
    ap.add_argument("--seed", type=int, default=1, help="training seed of every fold (run-to-run spread)")
    ap.add_argument("--leave-out-emotions", default="", help="emotions: comma-separated corpus labels to leave out of the task (e.g. calm)")
    ap.add_argument("--band-drop", type=float, default=0.0, help="share of examples whose bands outside ~300-3400 Hz are attenuated (augment.band_edge_drop)")
    ap.add_argument("--adv", type=float, default=0.0, help="weight of the gradient reversal that removes the nuisance (speaker_train.NUISANCE); negative: multi-task")
    ap.add_argument("--pitch-counter", type=float, default=0.0, help="gender: share of examples made of clips whose pitch points to the other gender")
    ap.add_argument("--corpora-count", type=int, default=0, help="train each fold on this many of the other corpora (learning curve)")
    ap.add_argument("--speaker-fraction", type=float, default=1.0, help="share of each corpus' training speakers kept (learning curve)")
    a = ap.parse_args()
    SD.leave_out_emotions(a.leave_out_emotions)
    SD.keep_speaker_fraction(a.speaker_fraction)  # before the pool forks, like the config below
    if a.cfg:  # set before the pool forks: the folds inherit it
        ST.CONFIGS[a.task] = {**ST.CONFIGS[a.task], **json.loads(a.cfg)}
    set_runs(a.runs)
    clips = D.load_clips()
    bank = B.build(clips)
    os.makedirs(os.path.join(RUNS, a.task), exist_ok=True)
    if not a.report_only:
        corpora = a.corpora.split(",") if a.corpora else corpora_of(a.task, clips)
        hp = {"examples": a.examples, "epochs": a.epochs, "lr": ST.DEFAULTS["lr"], "ema": ST.DEFAULTS["ema"], "runs": RUNS,
              "distill": a.distill, "dvec": a.dvec, "variants": a.variants,
              "embed_steps": a.embed_steps, "embed_then": a.embed_then, "seed": a.seed, "adv": a.adv, "band_drop": a.band_drop,
              "corpora_count": a.corpora_count, "pitch_counter": a.pitch_counter}
        with Pool(a.jobs) as pool:
            for done in pool.imap_unordered(_fold, [(a.task, c, hp) for c in corpora]):
                print(f"[loco {a.task}] fold {done} done", flush=True)
    rep = report(a.task, clips, bank)
    rep["recipe"] = {"examples": a.examples, "epochs": a.epochs, "cfg": ST.CONFIGS[a.task], "distill": a.distill, "dvec": a.dvec,
                     "variants": a.variants, "embed_steps": a.embed_steps,
                     "embed_then": a.embed_then, "seed": a.seed, "adv": a.adv, "band_drop": a.band_drop,
                     "left_out_emotions": a.leave_out_emotions, "speaker_fraction": a.speaker_fraction,
                     "corpora_count": a.corpora_count, "pitch_counter": a.pitch_counter}
    os.makedirs(os.path.join(a.out, a.task), exist_ok=True)
    with open(os.path.join(a.out, a.task, "loco.json"), "w") as fh:
        json.dump(rep, fh, indent=1)
        fh.write("\n")
    print(json.dumps({k: rep[k] for k in ("pooled_clean", "telephone")}, indent=1))
    for corpus, f in rep["folds"].items():
        print(f"  {corpus:8s} speakers {f['speakers']:3d} clean {f['clean']} phone uar {f['phone']['uar']}")


if __name__ == "__main__":
    main()
