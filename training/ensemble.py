"""Merge trained member models of one task into a single ONNX file that averages them.

    python -m training.ensemble --task gender --members training/runs/a training/runs/b --out models

The members are differently trained models of the same task (e.g. with and without the WORLD pitch
variants: one leans on pitch, the other on the spectral envelope, and they fail on different speakers).
The merged graph runs every member on the same input and returns softmax(mean(log p_i)), the
normalised geometric mean of their probabilities: still one file, one input, one output, so the
service sees an ordinary model.  Members must share the context (gain-norm window and dilations), which
is checked from their manifests.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

from . import data as D
from .card import write_model_dir
from .evaluation import CLASSES, evaluate, summary_metrics, val_set


PROB_FLOOR = 1e-30


def merge(paths: list[str], out: str) -> None:
    import onnx
    import onnx.numpy_helper
    from onnx import compose, helper
    graphs, inits, nodes, logs = [], [], [], []
    opset = None
    for i, p in enumerate(paths):
        m = compose.add_prefix(onnx.load(p), prefix=f"m{i}_")
        opset = m.opset_import
        g = m.graph
        nodes.append(helper.make_node("Identity", ["features"], [f"m{i}_features"]))
        nodes.extend(g.node)
        inits.extend(g.initializer)
        # floor before the log: a member may round a probability to exactly 0, and two members doing so for
        # different classes would otherwise give -inf for both and a NaN softmax
        nodes.append(helper.make_node("Clip", [f"m{i}_probs", "prob_floor"], [f"m{i}_probs_floored"]))
        nodes.append(helper.make_node("Log", [f"m{i}_probs_floored"], [f"m{i}_logp"]))
        logs.append(f"m{i}_logp")
        graphs.append(g)
    inits.append(onnx.numpy_helper.from_array(np.array(PROB_FLOOR, dtype=np.float32), "prob_floor"))
    nodes.append(helper.make_node("Mean", logs, ["mean_logp"]))
    nodes.append(helper.make_node("Softmax", ["mean_logp"], ["probs"], axis=-1))
    g0 = onnx.load(paths[0]).graph
    graph = helper.make_graph(nodes, "ensemble", [g0.input[0]], [g0.output[0]], initializer=inits)
    model = helper.make_model(graph, opset_imports=opset, producer_name="auris-training-ensemble")
    model.ir_version = onnx.load(paths[0]).ir_version  # what the members were exported with (the runtimes accept it)
    onnx.checker.check_model(model)
    onnx.save(model, out)


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def fuse(paths: list[str], out: str) -> None:
    """Same function as merge(), with the graph nodes of one member: members of identical structure become one
    network whose convolutions are grouped (member i = group i) after a shared gain normalisation, and whose head
    takes the log-softmax per member (finite, so no floor is needed), the mean over members, then the softmax.
    ONNX Runtime's cost per call on short streaming windows is mostly per node, so this halves a 2-member model's.
    Raises ValueError when the members' graphs differ in anything but their weights (then use merge())."""
    import onnx
    from onnx import helper, numpy_helper
    ms = [onnx.load(p) for p in paths]
    k = len(ms)
    g0 = ms[0].graph
    inits = [{i.name: numpy_helper.to_array(i) for i in m.graph.initializer} for m in ms]
    for m in ms[1:]:
        if len(m.graph.node) != len(g0.node):
            raise ValueError("members have different graphs")
        for a, b in zip(g0.node, m.graph.node):
            if (a.op_type, list(a.input), list(a.output), _attrs(a)) != (b.op_type, list(b.input), list(b.output), _attrs(b)):
                raise ValueError(f"members differ at {a.name or a.op_type}")
    ops = [n.op_type for n in g0.node]
    if ops.count("Softmax") != 1 or ops[-2:] != ["Softmax", "Transpose"] or "Conv" not in ops:
        raise ValueError("unexpected graph shape")
    nodes, new_inits, first_conv = [], [], True
    n_classes = None
    for i, n in enumerate(g0.node):
        if n.op_type == "Conv":
            ws = [inits[j][n.input[1]] for j in range(k)]
            if any(w.shape != ws[0].shape for w in ws):
                raise ValueError("members differ in width")
            at = _attrs(n)
            # the first convolution reads the shared normalised input: stack the members' filters (group unchanged);
            # every later one reads the stacked channels: one group per member
            at["group"] = at.get("group", 1) * (1 if first_conv else k)
            first_conv = False
            w_name, b_name = f"fused_{i}_w", f"fused_{i}_b"
            new_inits.append(numpy_helper.from_array(np.concatenate(ws, 0), w_name))
            ins = [n.input[0], w_name]
            if len(n.input) > 2:
                new_inits.append(numpy_helper.from_array(np.concatenate([inits[j][n.input[2]] for j in range(k)], 0), b_name))
                ins.append(b_name)
            nodes.append(helper.make_node("Conv", ins, list(n.output), **at))
            n_classes = ws[0].shape[0]
        elif n.op_type == "Softmax":
            if _attrs(n).get("axis") != 1:
                raise ValueError("head softmax not over channels")
            x = n.input[0]  # [B, k*C, S], member-major
            new_inits.append(numpy_helper.from_array(np.array([0, k, n_classes, -1], dtype=np.int64), "fused_split_shape"))
            nodes += [helper.make_node("Reshape", [x, "fused_split_shape"], ["fused_logits"]),
                      helper.make_node("LogSoftmax", ["fused_logits"], ["fused_logp"], axis=2),
                      helper.make_node("ReduceMean", ["fused_logp"], ["fused_mean_logp"], axes=[1], keepdims=0),
                      helper.make_node("Softmax", ["fused_mean_logp"], list(n.output), axis=1)]
        else:
            if any(name in inits[0] for name in n.input):
                raise ValueError(f"weights outside convolutions ({n.op_type})")
            nodes.append(n)
    graph = helper.make_graph(nodes, "ensemble_fused", [g0.input[0]], [g0.output[0]], initializer=new_inits)
    model = helper.make_model(graph, opset_imports=ms[0].opset_import, producer_name="auris-training-ensemble")
    model.ir_version = ms[0].ir_version
    onnx.checker.check_model(model)
    onnx.save(model, out)


def check_merged(paths: list[str], out: str, n_classes: int) -> float:
    """Max |merged - geometric mean of the members| on random inputs of several shapes."""
    import onnxruntime as ort
    sess = [ort.InferenceSession(p, providers=["CPUExecutionProvider"]) for p in paths]
    merged = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    diff = 0.0
    for B, S in ((1, 1), (2, 7), (1, 150)):
        x = (rng.standard_normal((B, 4 * S, 64)) * 3 - 5).astype(np.float32)
        logp = np.mean([np.log(np.maximum(s.run(None, {"features": x})[0], PROB_FLOOR)) for s in sess], axis=0)
        ref = np.exp(logp - logp.max(-1, keepdims=True))
        ref /= ref.sum(-1, keepdims=True)
        got = merged.run(None, {"features": x})[0]
        assert got.shape == (B, S, n_classes), got.shape
        diff = max(diff, float(np.abs(got - ref).max()))
    assert diff < 1e-4, diff
    return diff


class OrtModel:
    """The ONNX model behind the interface `train.evaluate` uses (eval(), model(x) -> probs)."""

    def __init__(self, path):
        import onnxruntime as ort
        self.sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])

    def eval(self):
        return self

    def __call__(self, x):
        import torch
        return torch.from_numpy(self.sess.run(None, {"features": x.numpy().astype(np.float32)})[0])


def build(task: str, members: list[str], out: str, version: str, weights: list[float] | None = None,
          merged_by: str = "python -m training.ensemble", reference: dict | None = None) -> dict:
    """Merge <member>/<task>/model.onnx files into <out>/<task>/ with manifest, metrics and card; returns the metrics.
    `weights` (for the card) are the members' shares of the fused log-probability when their heads were scaled
    for it (ensemble_add.weighted); None means equal members. `reference` (metrics.json's reference_previous_model)
    is a previous model scored on the same validation clips, shown beside this one in the card."""
    mans = [json.load(open(os.path.join(m, task, "manifest.json"))) for m in members]
    paths = [os.path.join(m, task, "model.onnx") for m in members]
    if any(m["context"] != mans[0]["context"] for m in mans):
        raise SystemExit("members differ in context: " + str([m["context"] for m in mans]))
    d = os.path.join(out, task)
    os.makedirs(d, exist_ok=True)
    fn = os.path.join(d, "model.onnx")
    try:
        fuse(paths, fn)
        how = "fused into grouped convolutions"
    except ValueError as e:
        print(f"[{task}] members cannot be fused ({e}); merging their graphs side by side", flush=True)
        merge(paths, fn)
        how = "side by side"
    diff = check_merged(paths, fn, len(CLASSES[task]))
    clips = D.load_clips()
    res = evaluate(OrtModel(fn), task, val_set(task, clips, D.AudioStore(clips)))
    if reference:
        res["reference_previous_model"] = reference
    man = dict(mans[0])
    man["version"] = version
    man["metrics"] = summary_metrics(task, res)
    man["model"] = {
        "parameters": sum(m["model"]["parameters"] for m in mans),
        "macs_per_step": sum(m["model"]["macs_per_step"] for m in mans),
        "onnx_opset": mans[0]["model"]["onnx_opset"],
        "architecture": f"ensemble of {len(mans)} ({how}; normalised geometric mean of the members' probabilities"
                        + (", weighted " + " / ".join(f"{w:g}" for w in weights) if weights else "") + "): "
                        + "; ".join(m["model"]["architecture"] for m in mans),
        "onnx_vs_members_max_abs_diff": diff,
    }
    man["training"] = {"ensemble_of": [dict(m["training"], architecture=m["model"]["architecture"]) for m in mans],
                       "merged_by": merged_by}
    if weights:
        man["training"]["weights"] = list(weights)
    write_model_dir(task, d, man, res, clips)
    o = res["overall"]
    print(f"[{task}] ensemble of {len(mans)} -> {fn} ({os.path.getsize(fn) / 1024:.0f} KB), clip acc {o['clip_accuracy']:.3f}"
          f" clip UAR {o['clip_balanced_accuracy']:.3f}, onnx diff {diff:.1e}", flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True, choices=list(CLASSES))
    ap.add_argument("--members", nargs="+", required=True, help="run folders holding <task>/model.onnx + manifest.json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", required=True)
    args = ap.parse_args()
    build(args.task, args.members, args.out, args.version)


if __name__ == "__main__":
    main()
