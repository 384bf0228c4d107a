"""Causal heads for live streams' provisional results (issue 30), first measured for `speech` (session 48).

Today a provisional result is the shipped network run again over a truncated window for every step of every stream
(src/inference/provisional-runner.ts): speech's 10-step window per step was 19-20 % of the inference workers' time at
300 streams (docs/streaming.md), more than the finals' streaming graph. A causal network, whose output at step s hears
nothing after step s + `lookahead`, can run as a stateful streaming graph at one step per call, and can be trained for
that job instead of borrowing a network that was trained with 12 steps of future.

CausalNet has the layers of training/models/net.Net (gain normalisation, 2 frame convolutions, max-pool to the step
rate, dilated residual convolutions, 1x1 head), every padding on the left: the gain mean is over the past `norm_k`
frames, each convolution reaches back only. Step s's output reads frames up to 4s + 3 (its own audio), and the
prediction for step s is the output at step s + lookahead. Trained on the longform recipe's cached synthetic examples
(recipes/longform.feature_cache, the same augmentation), scored exactly as training/validate/provisional.py scores
the truncated windows (the validation clips joined into long sequences, against the truth and against the finals).

    python -m training.recipes.causal train --task speech --lookahead 1 --out training/runs/causal-speech   # ~4 min
    python -m training.recipes.causal ship --run training/runs/causal-speech   # models/speech/provisional.onnx + .json
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from training.models.net import FRAMES_PER_STEP
from training.recipes.train_step import weighted_step

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# per task: the longform recipe step whose cached examples (and widths) a head is trained on
RECIPES = {"speech": ("1.1.0.json", "network"), "arousal": ("1.0.1.json", "network"), "gender": ("2.3.0.json", "member1"),
           # emotions' network came from the speaker recipe (feature bank), which makes no sequences: its head takes
           # arousal's longform synthesis with emotions' labels, corpora and held-out speakers (data/augment._task_split)
           "emotions": ("../arousal/1.0.1.json", "network")}
# hyperparameters a task's head changes in the recipe step it borrows
OVERRIDES = {"emotions": {"task": "emotions", "add_sources": ["ased", "nemo", "ettsdb"]}}


def task_classes(task: str) -> list:
    from training.data.speakers import EMOTION_CLASSES
    from training.validate.evaluation import CLASSES
    return {**CLASSES, "emotions": EMOTION_CLASSES}[task]


class CausalBlock(nn.Module):
    def __init__(self, c: int, d: int, p: float):
        super().__init__()
        self.d = d
        self.conv = nn.Conv1d(c, c, 3, dilation=d)
        self.bn = nn.BatchNorm1d(c)
        self.drop = nn.Dropout(p)

    def forward(self, h):
        return h + self.drop(F.relu(self.bn(self.conv(F.pad(h, (2 * self.d, 0))))))


class CausalNet(nn.Module):
    def __init__(self, n_classes: int, c1: int = 32, c2: int = 64, dil=(1, 2, 4, 8), norm_k: int = 31,
                 dropout: float = 0.1, n_mels: int = 64, lookahead: int = 1):
        super().__init__()
        self.norm_k, self.dil, self.lookahead = norm_k, tuple(dil), lookahead
        self.conv1 = nn.Conv1d(n_mels, c1, 3)
        self.bn1 = nn.BatchNorm1d(c1)
        self.conv2 = nn.Conv1d(c1, c2 // 2, 3)
        self.proj = nn.Conv1d(c2 // 2, c2, 1)
        self.blocks = nn.ModuleList([CausalBlock(c2, d, dropout) for d in dil])
        self.head = nn.Conv1d(c2, n_classes, 1)

    def past_context_steps(self) -> int:
        """Steps before s that step s's output hears (the frame convolutions' 4 frames and the gain mean within one)."""
        return 2 * sum(self.dil) + -(-(self.norm_k - 1 + 4) // FRAMES_PER_STEP)

    def trunk(self, x):  # [B, T, 64] -> [B, c2, S]
        x = x.transpose(1, 2)
        e = x.mean(dim=1, keepdim=True)  # [B, 1, T]
        T = e.shape[2]
        c = F.pad(torch.cumsum(e, dim=2), (1, 0))  # c[t] = sum of e[:t]
        hi = torch.arange(1, T + 1, device=x.device)
        lo = (hi - self.norm_k).clamp(min=0)
        m = (c[:, :, hi] - c[:, :, lo]) / (hi - lo).to(x.dtype)  # the mean of the past norm_k frames (fewer at the start)
        x = x - m
        h = F.relu(self.bn1(self.conv1(F.pad(x, (2, 0)))))
        h = F.relu(self.conv2(F.pad(h, (2, 0))))
        h = F.max_pool1d(h, FRAMES_PER_STEP, FRAMES_PER_STEP)
        h = self.proj(h)
        for b in self.blocks:
            h = b(h)
        return h

    def logits(self, x):  # [B, C, S]: column s hears frames < 4(s + 1)
        return self.head(F.relu(self.trunk(x)))

    def predict(self, feats: np.ndarray) -> np.ndarray:
        """Per-step probabilities [S, C] of one signal's frames as a stream would give them: step s from the output at
        s + lookahead (the last steps, whose lookahead is past the end, from the last output)."""
        with torch.no_grad():
            p = torch.softmax(self.logits(torch.from_numpy(feats[None]).float()), dim=1)[0].T.numpy()
        S = p.shape[0]
        idx = np.minimum(np.arange(S) + self.lookahead, S - 1)
        return p[idx]


def teacher_probs(task: str, X: np.ndarray, batch: int = 256) -> np.ndarray:
    """The shipped network's per-step probabilities [N, steps, C] on cached examples [N, frames, 64] (it hears both
    sides of each step, as a file does)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = torch.get_num_threads()
    sess = ort.InferenceSession(os.path.join(ROOT, "models", task, "model.onnx"), so)
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: X[i:i + batch].astype(np.float32)})[0] for i in range(0, len(X), batch)])


def train(task: str, examples: int, epochs: int, lookahead: int, dil, lr: float, seed: int, threads: int,
          c2: int | None = None, distill: float = 0.0) -> CausalNet:
    from training.data import clips as D
    from training.recipes import longform as L
    from training.recipes.config import LongformRecipe, from_dict, recipe_step

    recipe, name = RECIPES[task]
    step = recipe_step(os.path.join(ROOT, "training", "recipes", task, recipe), name)
    hp = dict(step["hyperparameters"])
    over = dict(OVERRIDES.get(task, {}))
    hp["sources"] = list(hp.get("sources", [])) + over.pop("add_sources", [])
    r = from_dict(LongformRecipe, {**hp, **over})
    cfg = r.model_config()  # the shipped network's widths and gain window; its dilations unless given
    clips = D.load_clips()
    store = D.AudioStore(clips)
    table = r.clip_table(clips)
    if task == "emotions":  # never a clip of the provisional validation (its held-out speakers), whatever the split says
        from training.validate import provisional as PV
        held = {row["path"] for row in PV.validation_rows(task)}
        table = [c for c in table if c.path not in held]
    X, Y, W = L.feature_cache(r.task, table, store, examples, r.seed, workers=threads,
                              use_variants=r.variants, high_p=r.gender_high_p)
    torch.manual_seed(seed)
    model = CausalNet(len(task_classes(task)), c1=cfg.get("c1", 32), c2=c2 or cfg.get("c2", 64), dil=dil or cfg.get("dil", (1, 2, 4, 8)),
                      norm_k=cfg.get("norm_k", 31), dropout=cfg.get("dropout", 0.1), lookahead=lookahead)
    Xt, Yt, Wt = torch.from_numpy(X), torch.from_numpy(Y.astype(np.int64)), torch.from_numpy(W.astype(np.float32))
    # distill > 0: the head also learns the shipped network's answers (KL to its probabilities, weighted by distill)
    Tt = torch.from_numpy(teacher_probs(task, X)) if distill > 0 else None
    bs = 64
    per_epoch = (len(X) + bs - 1) // bs
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=epochs * per_epoch, pct_start=0.15)
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.998), use_buffers=True)
    g = torch.Generator().manual_seed(seed)
    R = lookahead
    for ep in range(epochs):
        model.train()
        t0, tot, cnt = time.time(), 0.0, 0.0
        perm = torch.randperm(len(X), generator=g)
        for i in range(per_epoch):
            idx = perm[i * bs:(i + 1) * bs]
            xb, yb, wb = L.jitter(Xt[idx].float()), Yt[idx], Wt[idx]  # the longform recipe's augmentation
            logits = model.logits(xb)
            S = logits.shape[2]
            logits, yb, wb = logits[:, :, R:], yb[:, :S - R], wb[:, :S - R]  # step s answered by output s + R
            w = wb * (yb >= 0).float()
            loss = F.cross_entropy(logits, yb.clamp(min=0), reduction="none", label_smoothing=0.05)
            if Tt is not None:
                tb = Tt[idx][:, :S - R].permute(0, 2, 1)  # [B, C, S - R], the network's answer for step s
                kl = (tb * (torch.log(tb.clamp(min=1e-6)) - F.log_softmax(logits, dim=1))).sum(1)
                loss = loss + distill * kl
            t, c = weighted_step(model, ema, opt, sched, loss, w)
            tot, cnt = tot + t, cnt + c
        print(f"[causal {task}] epoch {ep + 1}/{epochs} loss {tot / max(cnt, 1):.4f} ({time.time() - t0:.0f}s)", flush=True)
    model = ema.module
    model.eval()
    return model


def evaluate(task: str, model: CausalNet) -> dict:
    """The causal head against the truth and the finals on provisional.py's sequences, beside the shipped plan."""
    import onnxruntime as ort
    from training.features import logmel_fast
    from training.validate import provisional as PV

    store, store_clips = PV.validation_store([task])
    sess = ort.InferenceSession(os.path.join(ROOT, "models", task, "model.onnx"))
    clips = {c.path: c for c in store_clips}
    items = [(clips[r["path"]], PV.classes(task).index(r["label"])) for r in PV.validation_rows(task) if r["path"] in clips]
    P, stride, left = PV.SHIPPED[task]
    truth_all, final_all, causal_all, shipped_all = [], [], [], []
    for x, truth in PV.sequences(task, store, items):
        feats = logmel_fast(x).astype(np.float32)
        S = min(len(truth), feats.shape[0] // FRAMES_PER_STEP)
        feats, truth = feats[:S * FRAMES_PER_STEP], truth[:S]
        truth_all.append(truth)
        final_all.append(sess.run(None, {sess.get_inputs()[0].name: feats[None]})[0][0].argmax(1))
        causal_all.append(model.predict(feats).argmax(1))
        shipped_all.append(PV.run_windows(sess, feats, left, P, S, stride).argmax(1))
    truth, final = np.concatenate(truth_all), np.concatenate(final_all)
    m = truth >= 0
    out = {"clips": len(items), "final": PV.score(task, truth, final)}
    for name, pred in (("shipped provisional: " + PV.plan_name(P, stride, left), np.concatenate(shipped_all)),
                       (f"causal head, lookahead {model.lookahead * 64} ms", np.concatenate(causal_all))):
        r = PV.score(task, truth, pred)
        r["changed_by_final"] = round(float((pred[m] != final[m]).mean()), 4)
        out[name] = r
    return out


def _head_row(rep: dict) -> tuple[str, dict]:
    """The report's own row: (its name, its figures)."""
    key = next(k for k in rep if k.startswith("causal head"))
    return key, rep[key]


def _also_row(other: dict, shipped: dict) -> tuple[str, dict]:
    """Another run's row, its name saying where its widths differ from the shipped head's."""
    key, row = _head_row(other)
    if other.get("channels", 64) != shipped.get("channels", 64):
        key += f", {other.get('channels', 64)} channels"
    if other.get("distill", 0) != shipped.get("distill", 0):
        key += ", labels only" if not other.get("distill") else f", distilled (weight {other['distill']})"
    return key, row


def ship(run: str, models_dir: str, also: list[str] = (), stride: int = 1) -> dict:
    """Exports a trained head (`run`: model.pt and report.json of `train`) as models/<task>/provisional.onnx, checks the
    graph against the network, and records it in models/<task>/provisional.json: `head` (the graph, read by the
    service: src/inference/registry.ts) and `head_validation` (the report's figures)."""
    rep = json.load(open(os.path.join(run, "report.json")))
    task = rep["task"]
    net = CausalNet(len(task_classes(task)), c1=rep.get("c1", 32), c2=rep.get("channels", 64), dil=tuple(rep["dilations"]),
                    norm_k=rep.get("norm_k", 31), lookahead=rep["lookahead_steps"])
    net.load_state_dict(torch.load(os.path.join(run, "model.pt")))
    net.eval()
    out = os.path.join(models_dir, task, "provisional.onnx")
    head = export_stream(net, out)
    head["stride_steps"] = stride  # a stream feeds the graph this many steps per call (the answers do not depend on it)
    head["vs_network_max_abs_diff"] = check_stream(net, out)
    head["made_by"] = f"python -m training.recipes.causal train --examples {rep['examples']} --epochs {rep['epochs']} " \
                      f"--lookahead {rep['lookahead_steps']} --dilations {','.join(str(d) for d in rep['dilations'])} " \
                      f"--channels {rep.get('channels', 64)} --task {task} " \
                      + (f"--distill {rep['distill']} " if rep.get("distill") else "") + \
                      f"--out RUN && python -m training.recipes.causal ship --run RUN --stride {stride}"
    path = os.path.join(models_dir, task, "provisional.json")
    doc = json.load(open(path))
    doc["head"] = head
    doc["head_validation"] = {k: v for k, v in rep.items() if k not in ("task",)}
    # other heads trained and scored the same way (e.g. another lookahead), for the card
    doc["head_validation"]["also_tried"] = dict(_also_row(json.load(open(os.path.join(r, "report.json"))), rep) for r in also)
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    return head


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train a head, score it (report.json) and keep its weights (model.pt)")
    t.add_argument("--task", default="speech", choices=sorted(RECIPES))
    t.add_argument("--examples", type=int, default=20000)
    t.add_argument("--epochs", type=int, default=12)
    t.add_argument("--lookahead", type=int, default=1, help="steps of future the head hears (64 ms each)")
    t.add_argument("--dilations", default="1,2,4,8", help="empty: the shipped network's")
    t.add_argument("--channels", type=int, default=None, help="the residual blocks' width (default: the shipped network's)")
    t.add_argument("--lr", type=float, default=0.003)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--distill", type=float, default=0.0, help="weight of the KL to the shipped network's step probabilities")
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--out", default=os.path.join(ROOT, "training", "runs", "causal-speech"))
    s = sub.add_parser("ship", help="export a trained head into models/<task>/ (provisional.onnx, provisional.json)")
    s.add_argument("--run", default=os.path.join(ROOT, "training", "runs", "causal-speech"))
    s.add_argument("--models", default=os.path.join(ROOT, "models"))
    s.add_argument("--also", nargs="*", default=[], help="runs of other heads scored the same way, listed in the card")
    s.add_argument("--stride", type=int, default=1, help="steps a stream feeds per call (1: every step, the lowest latency)")
    a = ap.parse_args(argv)
    if a.cmd == "ship":
        print(json.dumps(ship(a.run, a.models, a.also, a.stride)), flush=True)
        return
    torch.set_num_threads(a.threads)
    dil = tuple(int(v) for v in a.dilations.split(",")) if a.dilations else None
    model = train(a.task, a.examples, a.epochs, a.lookahead, dil, a.lr, a.seed, a.threads, a.channels, a.distill)
    os.makedirs(a.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(a.out, "model.pt"))
    res = {"task": a.task, "examples": a.examples, "epochs": a.epochs, "lookahead_steps": a.lookahead, "dilations": model.dil,
           **({"distill": a.distill} if a.distill > 0 else {}),
           "c1": model.conv1.out_channels, "channels": model.proj.out_channels, "norm_k": model.norm_k,
           "past_context_steps": model.past_context_steps(), **evaluate(a.task, model)}
    with open(os.path.join(a.out, "report.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    print(json.dumps(res), flush=True)




# ---------------------------------------------------------------- the stateful streaming graph of a trained head
def _folded(conv: nn.Conv1d, bn: nn.BatchNorm1d | None) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """A conv (and the eval-mode batch norm after it) as one matrix [k * C_in, C_out] over its taps side by side
    (tap j's channels at j * C_in, as training/export/streaming.py lays them), its bias, kernel and dilation."""
    w = conv.weight.detach().double()
    b = conv.bias.detach().double() if conv.bias is not None else torch.zeros(w.shape[0], dtype=torch.float64)
    if bn is not None:
        s = bn.weight.detach().double() / torch.sqrt(bn.running_var.double() + bn.eps)
        w = w * s[:, None, None]
        b = (b - bn.running_mean.double()) * s + bn.bias.detach().double()
    cout, cin, k = w.shape
    m = w.permute(2, 1, 0).reshape(k * cin, cout)  # [k, C_in, C_out] -> rows j * C_in + c
    return m.float(), b.float(), k, conv.dilation[0]


class CausalStream(nn.Module):
    """features [B, 4N, 64], state [B, state_size] -> probs [B, N, C] of the N new steps' outputs (output i answers step
    fed + i - lookahead), new state. Exact from the first step with a zero state, as a whole-signal run is: the state is
    [frames seen (capped), the past norm_k - 1 frames' mean energies, conv1's input (2 frames), conv2's input (2 frames),
    block i's input (2 d_i steps)], each time-major."""

    CAP = 1.0e6

    def __init__(self, net: CausalNet):
        super().__init__()
        self.k, self.lookahead = net.norm_k, net.lookahead
        self.conv1 = _folded(net.conv1, net.bn1)
        self.conv2 = _folded(net.conv2, None)
        self.proj = _folded(net.proj, None)
        self.blocks = [_folded(b.conv, b.bn) for b in net.blocks]
        self.head = _folded(net.head, None)
        c_in, c1, c2 = net.conv1.in_channels, net.conv1.out_channels, net.proj.out_channels
        self.layout = [(1, 1), (self.k - 1, 1), (2, c_in), (2, c1)] + [(2 * b[3], c2) for b in self.blocks]
        self.state_size = sum(t * c for t, c in self.layout)

    @staticmethod
    def _conv(h, c):
        w, b, k, d = c
        if k > 1:
            # taps cut with constant ends counted from the end (as training/export/streaming.py does): an end computed
            # from h's length exports as 4-7 shape nodes per tap, a quarter less time per call in the service
            h = torch.cat([h[:, j * d:-(k - 1 - j) * d] if j < k - 1 else h[:, j * d:] for j in range(k)], dim=2)
        return torch.matmul(h, w) + b

    def forward(self, features, state):
        parts = [t.reshape(-1, n, c) for t, (n, c) in zip(torch.split(state, [n * c for n, c in self.layout], dim=1), self.layout)]
        seen = parts[0]  # [B, 1, 1]
        e = features.mean(dim=2, keepdim=True)  # [B, 4N, 1]
        E = torch.cat([parts[1], e], dim=1)  # [B, k - 1 + 4N, 1]: frames before the signal start are zeros
        win = F.avg_pool1d(E.transpose(1, 2), self.k, 1).transpose(1, 2) * self.k  # sums of the k frames ending at each new one
        pos = torch.cumsum(torch.ones_like(e), dim=1) + seen  # frames up to and including each new one
        m = win / torch.clamp(pos, max=float(self.k))
        y = features - m
        Y = torch.cat([parts[2], y], dim=1)
        z1 = F.relu(self._conv(Y, self.conv1))
        Z1 = torch.cat([parts[3], z1], dim=1)
        z2 = F.relu(self._conv(Z1, self.conv2))
        z2 = z2.reshape(z2.shape[0], -1, FRAMES_PER_STEP, z2.shape[2]).amax(dim=2)
        h = self._conv(z2, self.proj)
        new = [torch.clamp(seen + e.shape[1], max=self.CAP), E[:, -(self.k - 1):], Y[:, -2:], Z1[:, -2:]]
        for j, c in enumerate(self.blocks):
            d = c[3]
            Hc = torch.cat([parts[4 + j], h], dim=1)
            h = h + F.relu(self._conv(Hc, c))
            new.append(Hc[:, -2 * d:])
        probs = torch.softmax(self._conv(F.relu(h), self.head), dim=2)
        return probs, torch.cat([t.flatten(1) for t in new], dim=1)


def export_stream(net: CausalNet, path: str) -> dict:
    """Writes the head's stateful graph (same input and output names as the finals' stream.onnx); returns the `head`
    section of provisional.json."""
    import onnx
    s = CausalStream(net.eval()).eval()
    x, st = torch.zeros(1, FRAMES_PER_STEP * 3, 64), torch.zeros(1, s.state_size)
    torch.onnx.export(s, (x, st), path, input_names=["features", "state"], output_names=["probs", "state_out"],
                      opset_version=17, dynamo=False, do_constant_folding=True,
                      dynamic_axes={"features": {0: "B", 1: "T"}, "state": {0: "B"}, "probs": {0: "B", 1: "S"},
                                    "state_out": {0: "B"}})
    onnx.checker.check_model(onnx.load(path))
    return {"file": os.path.basename(path), "input": "features", "state_input": "state", "output": "probs",
            "state_output": "state_out", "state_size": s.state_size, "delay_steps": net.lookahead,
            "past_context_steps": net.past_context_steps()}


def check_stream(net: CausalNet, path: str, steps: int = 200) -> float:
    """Max |graph fed in chunks - the network over the whole signal| for several chunkings (asserts < 1e-4)."""
    import onnxruntime as ort
    from training.export.streaming import test_signal
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    size = sess.get_inputs()[1].shape[1]
    worst = 0.0
    for seed, chunks in enumerate(([1] * steps, [steps], [3, 7, 1, 40] + [1] * 30 + [steps - 81])):
        x = test_signal(steps, seed)
        with torch.no_grad():
            ref = torch.softmax(net.logits(torch.from_numpy(x)), dim=1)[0].T.numpy()
        st, outs, s = np.zeros((1, size), np.float32), [], 0
        for n in chunks:
            p, st = sess.run(None, {"features": x[:, 4 * s:4 * (s + n)], "state": st})
            outs.append(p[0])
            s += n
        worst = max(worst, float(np.abs(np.concatenate(outs) - ref).max()))
    assert worst < 1e-4, worst
    return worst


if __name__ == "__main__":
    main()
