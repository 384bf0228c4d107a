"""Gender 2.0's encoder view: a linear head on the speaker encoder's window embeddings, fused
step by step with gender 1.3.0's network (src/inference/view-fusion.ts), chosen and scored
leave-one-corpus-out on the embeddings of training/encoders/embed.py.

  python -m training.encoders.gender evaluate   # LOCO tables -> models/gender/encoder_view.json
  python -m training.encoders.gender ship       # head on every corpus + fusion -> models/gender/manifest.json "views"

Scoring is per clip as the service decides a speech segment: the mean of the fused per-step
probabilities over its voiced steps (segment.ts), `unknown` under 0.55 (counted as wrong).
"""
from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

import numpy as np

from training.encoders.heads import balanced_weights, logistic
from training.encoders.windows import GATE_DB, WINDOW_STEPS

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "training/runs/encoders/gender.pkl"
OUT_JSON = ROOT / "models/gender/encoder_view.json"
HEAD_L2 = 1e-4
UNKNOWN = 0.55  # the service's GENDER_UNKNOWN_THRESHOLD (src/analysis/policies.ts)
# corpora gender 1.3.0 never heard: the fusion weights are fitted on these alone, so the network's
# weight is not inflated by its own training data
UNHEARD_BY_NET = ("speechocean", "audiomnist_az")
LOW_AROUSAL = {"sad", "calm", "level0", "sadness"}
HIGH_AROUSAL = {"angry", "happy", "fearful", "surprised", "fear", "anger", "happiness", "surprise", "level2"}


def load(path: Path = CACHE) -> list[dict]:
    with open(path, "rb") as f:
        return pickle.load(f)["records"]


def window_table(recs: list[dict]):
    X = np.concatenate([r["emb"] for r in recs])
    y = np.concatenate([np.full(len(r["windows"]), r["gender"] == "male", np.float64) for r in recs])
    spk = np.concatenate([np.full(len(r["windows"]), r["speaker"]) for r in recs])
    return X, y, spk


def fit_head(recs: list[dict]) -> tuple[np.ndarray, float]:
    X, y, spk = window_table(recs)
    return logistic(X, y, balanced_weights(spk, y), HEAD_L2)


def step_view_logits(r: dict, coef: np.ndarray, bias: float, every: int = 1) -> np.ndarray:
    """The view's log-odds in force at each step (NaN where none), with the service's carry rule."""
    S = r["levels"].size
    out = np.full(S, np.nan)
    z = dict(zip(r["windows"].tolist(), (r["emb"] @ coef + bias).tolist()))
    cur, run = np.nan, 0
    for k in range(-(-S // WINDOW_STEPS)):
        if k not in z:
            cur, run = np.nan, 0
        else:
            if run % every == 0:
                cur = z[k]
            run += 1
        out[k * WINDOW_STEPS:(k + 1) * WINDOW_STEPS] = cur
    return out


def fused_steps(r: dict, view: np.ndarray, fusion: tuple[float, float, float] | None) -> np.ndarray:
    """Per-step P(male): the network alone where no view (or fusion None), else the fused log-odds."""
    net = r["net"][: view.size]
    if fusion is None:
        z = net
    else:
        a, b, c = fusion
        z = np.where(np.isnan(view), net, a * net + b * np.nan_to_num(view) + c)
    return 1 / (1 + np.exp(-z))


def clip_decision(r: dict, p: np.ndarray) -> str:
    voiced = r["levels"][: p.size] >= GATE_DB
    m = float(p[voiced].mean()) if voiced.any() else float(p.mean())
    if max(m, 1 - m) < UNKNOWN:
        return "unknown"
    return "male" if m > 0.5 else "female"


def fit_fusion(recs: list[dict], views: list[np.ndarray]) -> tuple[float, float, float]:
    """(net, view, bias) by logistic regression over voiced steps that have a view."""
    rows, ys, spks = [], [], []
    for r, v in zip(recs, views):
        m = (~np.isnan(v)) & (r["levels"][: v.size] >= GATE_DB)
        if m.any():
            rows.append(np.stack([r["net"][: v.size][m], v[m]], 1))
            ys.append(np.full(m.sum(), r["gender"] == "male", np.float64))
            spks.append(np.full(m.sum(), r["speaker"]))
    X, y, spk = np.concatenate(rows), np.concatenate(ys), np.concatenate(spks)
    coef, bias = logistic(X, y, balanced_weights(spk, y), 1e-4)
    return float(coef[0]), float(coef[1]), bias


def slices(r: dict) -> list[str]:
    out = ["telephone" if r["channel"] != "clean" else "clean"]
    emo = r["emotion"].lower()
    if r["gender"] == "female" and emo in LOW_AROUSAL:
        out.append("low-arousal women")
    if r["gender"] == "male" and emo in HIGH_AROUSAL:
        out.append("high-arousal men")
    return out


def score(recs: list[dict], decisions: list[str]) -> dict:
    """Accuracy per corpus x channel and per stress slice (unknown counts as wrong)."""
    cells: dict[str, list[int]] = {}
    for r, d in zip(recs, decisions):
        ok = int(d == r["gender"])
        ch = "clean" if r["channel"] == "clean" else "telephone"
        for key in (f"{r['source']}/{ch}", *slices(r), "all"):
            cells.setdefault(key, []).append(ok)
    return {k: {"accuracy": round(float(np.mean(v)), 4), "clips": len(v)} for k, v in sorted(cells.items())}


def evaluate(recs: list[dict], every: int) -> dict:
    """Leave-one-corpus-out: head (and fusion) fitted without the held-out corpus."""
    sources = sorted({r["source"] for r in recs})
    views: list[np.ndarray | None] = [None] * len(recs)
    for s in sources:
        coef, bias = fit_head([r for r in recs if r["source"] != s])
        for i, r in enumerate(recs):
            if r["source"] == s:
                views[i] = step_view_logits(r, coef, bias, every)
    fusions = {}
    for s in sources:
        pick = [i for i, r in enumerate(recs) if r["source"] in UNHEARD_BY_NET and r["source"] != s]
        fusions[s] = fit_fusion([recs[i] for i in pick], [views[i] for i in pick])
    out = {"every": every, "fusion_per_fold": fusions, "tables": {}}
    for name in ("net", "view", "fused"):
        dec = []
        for r, v in zip(recs, views):
            if name == "net":
                p = fused_steps(r, v, None)
            elif name == "view":
                p = fused_steps(r, v, (0.0, 1.0, 0.0))
            else:
                p = fused_steps(r, v, fusions[r["source"]])
            dec.append(clip_decision(r, p))
        out["tables"][name] = score(recs, dec)
    return out


def print_table(ev: dict) -> None:
    t = ev["tables"]
    keys = list(t["fused"])
    print(f"{'cell':32s} {'clips':>6s} {'net':>7s} {'view':>7s} {'fused':>7s}")
    for k in keys:
        print(f"{k:32s} {t['fused'][k]['clips']:6d} {t['net'][k]['accuracy']:7.3f} {t['view'][k]['accuracy']:7.3f} {t['fused'][k]['accuracy']:7.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["evaluate", "ship"])
    ap.add_argument("--cache", default=str(CACHE))
    ap.add_argument("--every", type=int, nargs="+", default=[1, 4])
    a = ap.parse_args()
    recs = load(Path(a.cache))
    if a.command == "evaluate":
        results = {}
        for e in a.every:
            ev = evaluate(recs, e)
            print(f"\n== every {e}: fusion per fold {json.dumps({k: [round(x, 3) for x in v] for k, v in ev['fusion_per_fold'].items()})}")
            print_table(ev)
            results[str(e)] = ev
        OUT_JSON.write_text(json.dumps(results, indent=1) + "\n")
        return
    from training.encoders.ship import ship
    ship(recs)


if __name__ == "__main__":
    main()
