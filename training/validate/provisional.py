"""What a live stream's provisional results cost in accuracy, against the truth (docs/streaming.md, issue 30).

    python -m training.validate.provisional [--tasks speech,arousal,gender] [--plans 0x1,1x1,2x1,2x4] [--out FILE]
    python -m training.validate.provisional --write     # models/<task>/provisional.json, shown in the cards

A provisional result for step s is what the shipped network says when the signal ends P steps after s: the
whole-file model (`models/<task>/model.onnx`) over the window [s - left, s + P], zero padding beyond, exactly what
src/inference/provisional-runner.ts runs. The final result is the same network with its whole context.

Scored on long-form sequences made of the task's validation clips (training/validation/<task>.csv: source- and
speaker-disjoint from the training clips), 8-16 clips each in random order, separated by 0.2-1.5 s of quiet noise,
so onsets and class changes happen as they do in a stream. Truth per step: the clip's label on its voiced steps
(>= -50 dBFS); quiet gaps and unvoiced steps are not scored (the service labels them `silence` by level).

- speech: F1 of `speech` against music + other, final vs provisional, and the share of labels the final changes;
- arousal and emotions: unweighted average recall (3 and 4 classes); gender: accuracy (2 classes), per step,
  network alone (gender's encoder views fuse into finals only).
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

from training.data import clips as D
from training.features import FRAMES_PER_STEP as FRAMES, logmel_fast, step_levels
from training.validate.evaluation import CLASSES as _CLASSES, VOICED_DBFS, recall_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The plans (lookahead, stride, left context) in steps that --write records as `shipped` in each models/<task>/provisional.json:
# the service reads them there (src/inference/registry.ts readProvisionalPlan; provisional-runner.ts provisionalPlan), so
# changing a model's plan is changing it here and re-running --write.
SHIPPED = {"speech": (1, 1, 8), "arousal": (0, 4, 12), "gender": (0, 4, 12), "emotions": (4, 4, 12)}
# --write: the shipped plan and its neighbours (lookahead, stride[, left context]); the whole left context when absent
WRITE_PLANS = {"speech": [(0, 1), (1, 1), (2, 1), (1, 1, 8), (1, 1, 6)],
               "arousal": [(2, 1), (2, 4), (2, 4, 16), (2, 4, 12), (1, 4, 12), (0, 4), (0, 4, 12)],
               "gender": [(2, 1), (2, 4), (2, 4, 16), (2, 4, 12), (1, 4, 12), (0, 4), (0, 4, 12)],
               "emotions": [(0, 4, 12), (2, 4, 12), (2, 4), (4, 4), (6, 4, 12), (8, 4, 12), (4, 4, 12)]}


def classes(task: str) -> list[str]:
    """A task's class order: evaluation.CLASSES, else its manifest's raw keys (emotions: the order of its outputs)."""
    if task in _CLASSES:
        return list(_CLASSES[task])
    with open(os.path.join(ROOT, "models", task, "manifest.json")) as f:
        return json.load(f)["raw_keys"]


def plan_name(P: int, stride: int, left: int | None = None) -> str:
    return (f"lookahead {P * 64} ms, " + ("every step" if stride == 1 else f"a call every {stride} steps")
            + (f", left context {left} steps" if left is not None else ""))


def sequences(task: str, store: D.AudioStore, items, seed: int = 7):
    """Long-form signals of 8-16 validation clips with quiet gaps; yields (samples, per-step truth or -1)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(items))
    i = 0
    while i < len(order):
        k = int(rng.integers(8, 17))
        parts, truth = [], []
        for j in order[i:i + k]:
            c, y = items[j]
            gap = rng.normal(0, 10 ** (-70 / 20), int(rng.uniform(0.2, 1.5) * D.SR)).astype(np.float32)
            x = store.get(c)
            # whole steps only, so the truth stays on the step grid
            gap = gap[: len(gap) // 1024 * 1024]
            x = x[: len(x) // 1024 * 1024]
            lv = step_levels(x)
            parts += [gap, x]
            truth += [np.full(len(gap) // 1024, -1), np.where(lv >= VOICED_DBFS, y, -1)]
        i += k
        yield np.concatenate(parts), np.concatenate(truth)


def run_windows(sess, feats: np.ndarray, left: int, P: int, n_steps: int, stride: int = 1, batch: int = 256) -> np.ndarray:
    """Provisional probabilities [S, C] with P steps of lookahead and a call every `stride` steps: the steps
    [g, g + stride) come from one window [g - left, g + stride - 1 + P] (clipped to the signal), as the
    service's ProvisionalRunner calls them (its `align`), so a group's first step has stride - 1 more steps."""
    inp = sess.get_inputs()[0].name
    out = [None] * n_steps
    groups = list(range(0, n_steps, stride))
    # groups whose window is whole and inside the signal: batched calls
    full = [g for g in groups if g - left >= 0 and g + stride - 1 + P < n_steps]
    for a in range(0, len(full), batch):
        gs = full[a:a + batch]
        x = np.stack([feats[(g - left) * FRAMES:(g + stride + P) * FRAMES] for g in gs])
        pr = sess.run(None, {inp: x})[0]
        for g, p in zip(gs, pr):
            for j in range(stride):
                out[g + j] = p[left + j]
    for g in groups:
        if out[g] is not None:
            continue
        a, b = max(0, g - left), min(n_steps, g + stride + P)
        p = sess.run(None, {inp: feats[a * FRAMES:b * FRAMES][None]})[0][0]
        for j in range(min(stride, n_steps - g)):
            out[g + j] = p[g + j - a]
    return np.stack(out)


def score(task: str, truth: np.ndarray, pred: np.ndarray) -> dict:
    m = truth >= 0
    y, p = truth[m], pred[m]
    n = len(classes(task))
    rec = list(recall_table(y, p, n).values())
    r = {"steps": int(m.sum()), "uar": round(float(np.nanmean(rec)), 4), "accuracy": round(float((y == p).mean()), 4)}
    if task == "speech":
        si = classes(task).index("speech")
        tp, fp, fn = ((y == si) & (p == si)).sum(), ((y != si) & (p == si)).sum(), ((y == si) & (p != si)).sum()
        r["speech_f1"] = round(float(2 * tp / max(1, 2 * tp + fp + fn)), 4)
    return r


def validation_rows(task: str) -> list[dict]:
    """The task's provisional validation clips (training/validation/<task>.csv rows: path, label, ...)."""
    import csv
    return list(csv.DictReader(open(os.path.join(ROOT, "training", "validation", f"{task}.csv"))))


def validation_store(tasks) -> tuple[D.AudioStore, list]:
    """The validation clips of all the tasks, decoded once (cached under training/cache/audio)."""
    paths = {r["path"] for t in tasks for r in validation_rows(t)}
    wanted = [c for c in D.load_clips() if c.path in paths]
    return D.AudioStore(wanted), wanted


def evaluate(task: str, plans, models_dir: str, store: D.AudioStore, store_clips) -> dict:
    import onnxruntime as ort

    man = json.load(open(os.path.join(models_dir, task, "manifest.json")))
    left = man["context"]["left_steps"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(os.path.join(models_dir, task, "model.onnx"), so)
    clips = {c.path: c for c in store_clips}
    rows = [r for r in validation_rows(task) if r["path"] in clips]
    items = [(clips[r["path"]], classes(task).index(r["label"])) for r in rows]
    truth_all, final_all, prov_all = [], [], {pl: [] for pl in plans}
    for x, truth in sequences(task, store, items):
        feats = logmel_fast(x).astype(np.float32)
        S = min(len(truth), feats.shape[0] // FRAMES)
        feats, truth = feats[: S * FRAMES], truth[:S]
        final = sess.run(None, {sess.get_inputs()[0].name: feats[None]})[0][0]
        truth_all.append(truth)
        final_all.append(final.argmax(1))
        for plan in plans:
            P, stride = plan[:2]
            prov_all[plan].append(run_windows(sess, feats, plan[2] if len(plan) > 2 else left, P, S, stride).argmax(1))
    truth = np.concatenate(truth_all)
    final = np.concatenate(final_all)
    res = {"clips": len(items), "final": score(task, truth, final), "provisional": {}}
    m = truth >= 0
    for plan in plans:
        P, stride = plan[:2]
        prov = np.concatenate(prov_all[plan])
        r = score(task, truth, prov)
        r["changed_by_final"] = round(float((prov[m] != final[m]).mean()), 4)
        res["provisional"][plan_name(*plan)] = r
    return res


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="speech,arousal,gender")
    ap.add_argument("--plans", default="0x1,1x1,2x1,2x4", help="lookahead x stride[x left context], steps, comma-separated")
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--write", action="store_true", help="models/<task>/provisional.json (the shipped plan and its neighbours)")
    a = ap.parse_args(argv)
    plans = [tuple(int(v) for v in pl.split("x")) for pl in a.plans.split(",")]
    tasks = a.tasks.split(",")
    store, store_clips = validation_store(tasks)
    out = {}
    for task in tasks:
        out[task] = evaluate(task, WRITE_PLANS[task] if a.write else plans, a.models, store, store_clips)
        print(task, json.dumps(out[task]), flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(out, fh, indent=1)
    if a.write:
        for task, res in out.items():
            P, stride, left = SHIPPED[task]
            res = {"task": task, "command": "python -m training.validate.provisional --write",
                   "shipped": {"lookahead_steps": P, "stride_steps": stride, "left_context_steps": left,
                               "key": plan_name(P, stride, left)},
                   **res}
            path = os.path.join(a.models, task, "provisional.json")
            if os.path.exists(path):  # a causal head shipped beside the plan (training/recipes/causal.py ship) stays
                old = json.load(open(path))
                res.update({k: old[k] for k in ("head", "head_validation") if k in old})
            with open(path, "w") as fh:
                json.dump(res, fh, indent=1)
                fh.write("\n")


if __name__ == "__main__":
    main()
