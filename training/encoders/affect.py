"""Arousal 2.x and emotions 2.x: heads on encoder views (speaker encoder, Whisper tiny.en layers),
fused step by step with the shipped network (src/inference/view-fusion.ts, C classes), chosen and
scored leave-one-corpus-out on the embeddings of training/encoders/embed_affect.py.

  python -m training.encoders.affect evaluate --task arousal --views emb,wh2     # LOCO tables
  python -m training.encoders.affect ship --task arousal --views wh2             # -> models/arousal/manifest.json "views"

Views are named by embedding key: `emb` (the speaker encoder), `wh<L>` (the mean of the Whisper
tiny.en states after block L; wh0 after the convolutions, wh4 the encoder's output).
Scoring is per clip as a speech segment reads: the mean of the fused per-step probabilities
over its voiced steps, argmax. Slices: clean, telephone, short (a 0.5-1.2 s crop of the clip).
"""
from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

import numpy as np
import torch

from training.data.speakers import AROUSAL_CLASSES, EMOTION_CLASSES
from training.encoders.embed_affect import CAMPPLUS_VIEWS
from training.encoders.heads import class_balanced_weights, softmax_regression
from training.validate.evaluation import recall_table
from training.encoders.windows import GATE_DB, MIN_VOICED_STEPS, WINDOW_STEPS

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "training/runs/encoders/affect.pkl"
CLASSES = {"arousal": AROUSAL_CLASSES, "emotions": EMOTION_CLASSES}
# corpora the shipped networks never heard (arousal 1.0.1: ravdess + baved; emotions 1.1.0: ravdess):
# the fusion is fitted on these alone, and only their folds are honest for the fused model
UNHEARD = {"arousal": ("ased", "emospeech", "ettsdb", "nemo", "urdu"), "emotions": ("emospeech",)}
# the fusion is fitted on these (leave-one-corpus-out): the unheard corpora for arousal; for emotions, whose network
# heard the training speakers of every corpus but emospeech, all of them (its network weight is then optimistic)
FUSION_FIT = {"arousal": UNHEARD["arousal"], "emotions": ("ased", "emospeech", "ettsdb", "nemo", "ravdess", "urdu")}
HEAD_L2 = 0.02  # strong: heads that fit the training corpora closely transfer worse (LOCO)
FUSION_L2 = 1e-3


def load(path: Path = CACHE) -> list[dict]:
    """The cache's records; the short crops come from its `_short` sibling when there is one (embed_affect.py
    --only short: crops placed anywhere on the window grid) instead of the main run's."""
    with open(path, "rb") as f:
        recs = pickle.load(f)["records"]
    short = path.with_name(path.stem + "_short.pkl")
    if short.exists():
        with open(short, "rb") as f:
            recs = [r for r in recs if r["channel"] != "short"] + pickle.load(f)["records"]
    extra = path.with_name(path.stem + "_emospeech.pkl")  # embed_affect.py --corpora emospeech
    if extra.exists():
        with open(extra, "rb") as f:
            recs += pickle.load(f)["records"]
    return recs


CAMPPLUS_KEYS = {f"emb_{name}": name for name in CAMPPLUS_VIEWS}  # embed_affect.py's keys -> models/encoders/<name>


def features(r: dict, key: str) -> np.ndarray:
    if key == "emb":
        return r["emb"].astype(np.float32)
    if key in CAMPPLUS_KEYS:
        return r[key].astype(np.float32)
    if key.startswith("wh"):
        return r["whisper"][:, int(key[2:])].astype(np.float32)
    raise ValueError(key)


def task_recs(recs: list[dict], task: str) -> list[dict]:
    out = []
    for r in recs:
        lab = r[task]
        if lab in CLASSES[task]:
            out.append({**r, "y": CLASSES[task].index(lab)})
    return out


_HEADS: dict = {}


def head_without(recs: list[dict], excluded: frozenset, key: str, C: int, l2: float = HEAD_L2):
    """The head fitted on every corpus but `excluded` (short crops left out), memoised: the LOCO columns share them."""
    k = (id(recs), excluded, key, C, l2)
    if k not in _HEADS:
        _HEADS[k] = fit_head([r for r in recs if r["source"] not in excluded and r["channel"] != "short"], key, C, l2)
    return _HEADS[k]


def fit_head(recs: list[dict], key: str, C: int, l2: float = HEAD_L2):
    """A head on one view's window embeddings, standardised inside (folded into W, b on return)."""
    X = np.concatenate([features(r, key) for r in recs]).astype(np.float64)
    y = np.concatenate([np.full(len(r["windows"]), r["y"]) for r in recs])
    spk = np.concatenate([np.full(len(r["windows"]), r["speaker"]) for r in recs])
    mu, sd = X.mean(0), X.std(0) + 1e-6
    W, b = softmax_regression((X - mu) / sd, y, class_balanced_weights(spk, y, C), C, l2)
    W = W / sd
    return W, b - W @ mu


def step_view_logits(r: dict, head, key: str, every: int) -> np.ndarray:
    """[S, C] view logits in force at each step (NaN where none), with the service's carry rule."""
    W, b = head
    S = r["levels"].size
    out = np.full((S, W.shape[0]), np.nan)
    z = dict(zip(r["windows"].tolist(), features(r, key) @ W.T + b))
    cur, run = None, 0
    for k in range(-(-S // WINDOW_STEPS)):
        if k not in z:
            cur, run = None, 0
        else:
            if run % every == 0:
                cur = z[k]
            run += 1
        if cur is not None:
            out[k * WINDOW_STEPS:(k + 1) * WINDOW_STEPS] = cur
    return out


def net_logp(r: dict, task: str, S: int) -> np.ndarray:
    return np.log(np.clip(r[f"net_{task}"][:S], 1e-6, 1.0))


def fused_steps(r: dict, task: str, views: list[np.ndarray], fusion) -> np.ndarray:
    """[S, C] fused probabilities (the network's own where no view, or fusion None; no views: every step recalibrated)."""
    S = views[0].shape[0] if views else r[f"net_{task}"].shape[0]
    lp = net_logp(r, task, S)
    if fusion is None:
        return np.exp(lp)
    a, bs, bias = fusion
    z = a * lp + sum(w * np.nan_to_num(v) for w, v in zip(bs, views)) + bias
    if views:
        z = np.where(np.isnan(views[0][:, :1]), lp, z)
    z = z - z.max(1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(1, keepdims=True)


def clip_decision(r: dict, p: np.ndarray) -> int:
    voiced = r["levels"][: p.shape[0]] >= GATE_DB
    return int((p[voiced] if voiced.any() else p).mean(0).argmax())


def fit_fusion(recs: list[dict], task: str, views: list[list[np.ndarray]], C: int, net: bool = True):
    """(net weight, [view weights], bias[C]) by softmax regression over voiced steps that have a view."""
    rows, ys, spks = [], [], []
    for r, vs in zip(recs, views):
        S = vs[0].shape[0] if vs else r[f"net_{task}"].shape[0]
        m = (r["levels"][:S] >= GATE_DB) & (~np.isnan(vs[0][:, 0]) if vs else True)
        if m.any():
            rows.append(np.stack([net_logp(r, task, S)[m] * (1.0 if net else 0.0), *[v[m] for v in vs]], 1))
            ys.append(np.full(m.sum(), r["y"]))
            spks.append(np.full(m.sum(), r["speaker"]))
    X = torch.from_numpy(np.concatenate(rows))  # [N, 1 + V, C]
    y = torch.from_numpy(np.concatenate(ys))
    wt = torch.from_numpy(class_balanced_weights(np.concatenate(spks), np.concatenate(ys), C))
    a = torch.ones(X.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(C, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([a, b], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        z = (X * a[None, :, None]).sum(1) + b
        loss = (wt * torch.nn.functional.cross_entropy(z, y, reduction="none")).mean() + 0.5 * FUSION_L2 * (a * a).sum()
        loss.backward()
        return loss

    opt.step(closure)
    av = a.detach().numpy()
    return float(av[0]) if net else 0.0, [float(v) for v in av[1:]], b.detach().numpy()


FIT_SHORT = True  # the fusion is fitted on full clips and short crops alike (short turns must not default to neutral)


def loco(recs: list[dict], task: str, keys: list[str], every: int, use_net: bool = True):
    """Per clip: per-step probabilities with heads and fusion fitted without its corpus."""
    C = len(CLASSES[task])
    probs: list = [None] * len(recs)
    sources = sorted({r["source"] for r in recs})
    for s in sources:
        train = [r for r in recs if r["source"] != s]
        heads = [head_without(recs, frozenset([s]), k, C) for k in keys]
        # the fusion: on the unheard corpora other than s, with their view logits from heads without them
        fuse_src = [u for u in FUSION_FIT[task] if u != s and u in sources]
        fr, fv = [], []
        for u in fuse_src:
            hu = [head_without(recs, frozenset([s, u]), k, C) for k in keys]
            for r in train:
                if r["source"] == u and (FIT_SHORT or r["channel"] != "short"):
                    fr.append(r)
                    fv.append([step_view_logits(r, h, k, every) for h, k in zip(hu, keys)])
        fusion = fit_fusion(fr, task, fv, C, net=use_net)
        for i, r in enumerate(recs):
            if r["source"] == s:
                vs = [step_view_logits(r, h, k, every) for h, k in zip(heads, keys)]
                probs[i] = fused_steps(r, task, vs, fusion)
        print(f"  fold {s}: fusion net {fusion[0]:.2f} views {np.round(fusion[1], 2).tolist()} bias {np.round(fusion[2], 2).tolist()}", flush=True)
    return probs


def uar(y: np.ndarray, d: np.ndarray, C: int) -> tuple[float, list[float]]:
    rec = list(recall_table(y, d, C).values())
    return float(np.nanmean(rec)), rec


def voiced_seconds(r: dict) -> float:
    return float((r["levels"] >= GATE_DB).sum()) * 0.064


LENGTHS = {"<1.2 s": (0.0, 1.2), "1.2-3 s": (1.2, 3.0), ">3 s": (3.0, 1e9)}


def cell_of(r: dict) -> list[str]:
    """The slices a clip version belongs to: its recording, and (clean full clips and short crops) its voiced length."""
    ch = r["channel"] if r["channel"] in ("clean", "short") else "telephone"
    out = [ch]
    if ch != "telephone":
        sec = voiced_seconds(r)
        out += [name for name, (lo, hi) in LENGTHS.items() if lo <= sec < hi]
    return out


SLICES = ("clean", "telephone", "short", *LENGTHS)


def table(recs: list[dict], task: str, decisions: list[int]) -> dict:
    C = len(CLASSES[task])
    y = np.array([r["y"] for r in recs])
    d = np.array(decisions)
    cells = [cell_of(r) for r in recs]
    src = np.array([r["source"] for r in recs])
    out = {}
    for s in sorted(set(src)):
        for ch in SLICES:
            m = (src == s) & np.array([ch in c for c in cells])
            if m.sum() >= 10:
                u, rec = uar(y[m], d[m], C)
                out[f"{s}/{ch}"] = {"uar": round(u, 4), "recall": [round(v, 4) for v in rec], "clips": int(m.sum())}
    for ch in SLICES:
        for group, srcs in (("unheard", UNHEARD[task]), ("all", None)):
            keys = [f"{s}/{ch}" for s in sorted(set(src)) if (srcs is None or s in srcs) and f"{s}/{ch}" in out]
            if keys:
                out[f"mean {group}/{ch}"] = {"uar": round(float(np.mean([out[k]["uar"] for k in keys])), 4), "clips": sum(out[k]["clips"] for k in keys)}
    return out


def evaluate(recs: list[dict], task: str, keys: list[str], every: int, columns: str = "all") -> dict:
    recs = task_recs(recs, task)
    cols: dict = {"net": None, "net recalibrated": ([], True)}
    if columns == "all":
        for k in keys:
            cols[f"view {k}"] = ([k], False)
        if len(keys) > 1:
            cols["views " + "+".join(keys)] = (keys, False)
    cols["fused " + "+".join(keys)] = (keys, True)
    out = {}
    for name, sel in cols.items():
        print(f"{task}: {name}", flush=True)
        if sel is None:
            probs = [np.exp(net_logp(r, task, r["levels"].size)) for r in recs]
        else:
            probs = loco(recs, task, sel[0], every, use_net=sel[1])
        out[name] = table(recs, task, [clip_decision(r, p) for r, p in zip(recs, probs)])
    return out


def print_tables(t: dict) -> None:
    cols = list(t)
    print(f"{'cell':24s} {'clips':>6s} " + " ".join(f"{c[-14:]:>14s}" for c in cols))
    for k in t[cols[0]]:
        print(f"{k:24s} {t[cols[0]][k]['clips']:6d} " + " ".join(f"{t[c][k]['uar']:14.3f}" for c in cols))


# ---- shipping: <task> 2.0 = the shipped network (model.onnx and its streaming graphs, unchanged) plus the views

ENCODER_OF_KEY = {"emb": "speaker", **CAMPPLUS_KEYS, **{f"wh{i}": "whisper" for i in range(5)}}


def ship(recs: list[dict], task: str, keys: list[str], every: int, version: str, manifest: Path | None = None) -> dict:
    """Writes the views into the task's manifest (heads on every corpus, the fusion as in `loco`), with its version."""
    from training.encoders.windows import GATE_DB as GATE, MIN_VOICED_STEPS as MINV, WINDOW_STEPS as WS
    manifest = manifest or ROOT / f"models/{task}/manifest.json"
    recs = task_recs(recs, task)
    C = len(CLASSES[task])
    heads = [head_without(recs, frozenset(), k, C) for k in keys]
    fr, fv = [], []
    for u in FUSION_FIT[task]:
        hu = [head_without(recs, frozenset([u]), k, C) for k in keys]
        for r in recs:
            if r["source"] == u and (FIT_SHORT or r["channel"] != "short"):
                fr.append(r)
                fv.append([step_view_logits(r, h, k, every) for h, k in zip(hu, keys)])
    net, views, bias = fit_fusion(fr, task, fv, C)
    m = json.loads(manifest.read_text())
    network = m.get("training", {}).get("encoder_view", {}).get("network", f"{task} {m['version']} (model.onnx, unchanged)")
    rnd = lambda a, n=6: [round(float(x), n) for x in a]  # noqa: E731
    m["version"] = version
    m["views"] = {
        "schedule": {"window_steps": WS, "every": every, "min_voiced_steps": MINV, "gate_db": GATE},
        "encoders": [{"encoder": ENCODER_OF_KEY[k], "head": {"weights": [rnd(row, 7) for row in W], "bias": rnd(b)}} for k, (W, b) in zip(keys, heads)],
        "fusion": {"net": round(net, 6), "views": rnd(views), "bias": rnd(bias)},
    }
    m.setdefault("training", {})["encoder_view"] = {
        "network": network,
        "heads": f"one softmax regression per encoder ({', '.join(ENCODER_OF_KEY[k] for k in keys)}) on its window embeddings, "
                 f"speaker- and class-balanced, standardised, L2 {HEAD_L2}, every labelled corpus clean and through telephone codecs "
                 f"({sum(r['channel'] != 'short' for r in recs)} clip versions)",
        "fusion": f"softmax regression of (network log-probabilities, each head's logits) over voiced steps of "
                  f"{', '.join(FUSION_FIT[task])}, head outputs leave-one-corpus-out",
        "sources": sorted({r['source'] for r in recs}),
        "reproduce": f"python -m training.encoders.embed_affect && python -m training.encoders.affect ship --task {task} "
                     f"--views {','.join(keys)} --every {every} --version {version}",
    }
    manifest.write_text(json.dumps(m, indent=2) + "\n")
    return m["views"]["fusion"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["evaluate", "ship"])
    ap.add_argument("--task", choices=list(CLASSES), default="arousal")
    ap.add_argument("--cache", default=str(CACHE))
    ap.add_argument("--views", default="emb")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--version", default="2.0.0")
    ap.add_argument("--columns", choices=["all", "fused"], default="all", help="fused: the network and the fused views only")
    a = ap.parse_args()
    recs = load(Path(a.cache))
    keys = a.views.split(",")
    if a.command == "evaluate":
        t = evaluate(recs, a.task, keys, a.every, a.columns)
        print_tables(t)
        if a.out:
            Path(a.out).write_text(json.dumps(t, indent=1) + "\n")
        return
    print(json.dumps(ship(recs, a.task, keys, a.every, a.version)))


if __name__ == "__main__":
    main()
