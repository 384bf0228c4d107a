"""Ensembles: trained member models of one task in one ONNX file that returns the normalised geometric mean of their
probabilities (softmax of the mean of their log-probabilities), so the service sees an ordinary model.

    python -m training.export.ensemble merge --task gender --members training/runs/a training/runs/b --out models --version X
    python -m training.export.ensemble add --task gender --shipped <folder with gender/> --new training/runs/g13 \
        --version 1.3.0 --weight-new 0.5 --out models

`merge`: the members are differently trained models of the same task (e.g. with and without the WORLD pitch
variants: one leans on pitch, the other on the spectral envelope, and they fail on different speakers); they must
share the context (gain-norm window and dilations), checked from their manifests.  Members of the same shape are
fused into grouped convolutions (fuse), others are run side by side (merge).

`add`: a member joins a shipped fused ensemble whose members are as wide as the new one or narrower.  The shipped
members are taken back out of its grouped convolutions and zero-padded to the new member's width (a padded channel
has zero weights and bias, so it stays 0 through every ReLU and residual sum and the head ignores it: exact), then
fused again with the new one like freshly trained members.  Why not retrain the old members: gender 1.2.0's two
members were chosen on validation and only member 1 re-trains bit-identically; this keeps them as users have them.

Weights (`--weight-new W`, or a recipe's `weights`): the fused file takes the plain mean of its members'
log-softmaxes, and log_softmax(z) differs from z by a constant over the classes, so softmax(mean_i s_i z_i) =
softmax(sum_i w_i log p_i) when member i's head (weights and bias) is scaled by s_i = k w_i: exact, with the same
graph.  W = 0.5 weighs the new member as much as the shipped file.
"""
from __future__ import annotations

import argparse
import copy
import json
import os

import numpy as np

from training.data import clips as D
from training.export.onnx import write_model_dir
from training.validate.evaluation import CLASSES, evaluate, summary_metrics, val_set


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
          merged_by: str = "python -m training.export.ensemble", reference: dict | None = None, clips=None,
          quick: bool = False) -> dict:
    """Merge <member>/<task>/model.onnx files into <out>/<task>/ with manifest, metrics and card; returns the metrics.
    `weights` (for the card) are the members' shares of the fused log-probability when their heads were scaled
    for it (weighted below); None means equal members. `reference` (metrics.json's reference_previous_model)
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
    clips = clips if clips is not None else D.load_clips()
    res = evaluate(OrtModel(fn), task, val_set(task, clips, D.AudioStore(clips), quick=quick))
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


# ------------------------------------------------------------------ add a member to a shipped ensemble
MEMBER_DIRS = "training/runs/ensemble_add"  # default work folder of the padded and weighted members


def _convs(model):
    """The Conv nodes of a graph in order, with their weight and bias initializer names."""
    return [n for n in model.graph.node if n.op_type == "Conv"]


def split_fused(path: str) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Per member, the (weight, bias) of each convolution of a fused ensemble (ensemble.fuse's layout: the first
    convolution stacks the members' filters, every later one has one group per member)."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    convs = _convs(m)
    k = int(next(a.i for a in convs[1].attribute if a.name == "group"))
    out = [[] for _ in range(k)]
    for n in convs:
        w, b = inits[n.input[1]], inits[n.input[2]]
        rows = w.shape[0] // k
        for j in range(k):
            out[j].append((w[j * rows:(j + 1) * rows], b[j * rows:(j + 1) * rows]))
    return out


def pad_member(convs, template_shapes) -> list[tuple[np.ndarray, np.ndarray]]:
    """Zero-pads each (weight [out, in, k], bias [out]) to the template's shape."""
    out = []
    for (w, b), shape in zip(convs, template_shapes):
        W = np.zeros(shape, dtype=np.float32)
        W[:w.shape[0], :w.shape[1], :] = w
        B = np.zeros(shape[0], dtype=np.float32)
        B[:b.shape[0]] = b
        out.append((W, B))
    return out


def write_member(template_path: str, convs, out_path: str) -> None:
    """The template's graph with these convolution weights."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(template_path)
    by_name = {i.name: i for i in m.graph.initializer}
    for n, (w, b) in zip(_convs(m), convs):
        by_name[n.input[1]].CopyFrom(numpy_helper.from_array(w, n.input[1]))
        by_name[n.input[2]].CopyFrom(numpy_helper.from_array(b, n.input[2]))
    onnx.save(m, out_path)


def member_dirs(task: str, shipped: str, new: str, work: str = MEMBER_DIRS) -> list[str]:
    """Folders <dir>/<task>/{model.onnx, manifest.json} for the shipped members (padded) and the new one."""
    import onnx
    from onnx import numpy_helper
    template = os.path.join(new, task, "model.onnx")
    t = onnx.load(template)
    inits = {i.name: numpy_helper.to_array(i) for i in t.graph.initializer}
    shapes = [inits[n.input[1]].shape for n in _convs(t)]
    man = json.load(open(os.path.join(shipped, task, "manifest.json")))
    old = man["training"]["ensemble_of"]
    dirs = []
    for j, convs in enumerate(split_fused(os.path.join(shipped, task, "model.onnx"))):
        padded = any(w.shape != shape for (w, _), shape in zip(convs, shapes))
        d = os.path.join(work, f"{task}_{man['version']}_member{j + 1}")
        os.makedirs(os.path.join(d, task), exist_ok=True)
        write_member(template, pad_member(convs, shapes), os.path.join(d, task, "model.onnx"))
        mm = copy.deepcopy(man)
        mm["training"] = {k: v for k, v in old[j].items() if k != "architecture"}
        mm["training"]["member_of"] = f"{task} {man['version']}"
        mm["model"] = {"parameters": man["model"]["parameters"] // len(old),
                       "macs_per_step": man["model"]["macs_per_step"] // len(old),
                       "onnx_opset": man["model"]["onnx_opset"],
                       "architecture": old[j]["architecture"] + f" (member {j + 1} of {task} {man['version']}"
                                       + (f", zero-padded to {shapes[-2][0]} channels)" if padded else ")")}
        json.dump(mm, open(os.path.join(d, task, "manifest.json"), "w"), indent=2)
        dirs.append(d)
    # the padded members, averaged, must give exactly the shipped file
    check_merged([os.path.join(d, task, "model.onnx") for d in dirs], os.path.join(shipped, task, "model.onnx"),
                   len(man["raw_keys"]))
    return dirs + [new]


def scale_head(src: str, dst: str, task: str, scale: float) -> str:
    """A copy of member folder src in dst whose head convolution (weights and bias) is multiplied by scale."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(os.path.join(src, task, "model.onnx"))
    by_name = {i.name: i for i in m.graph.initializer}
    head = _convs(m)[-1]
    for name in head.input[1:3]:
        by_name[name].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(by_name[name]) * np.float32(scale), name))
    os.makedirs(os.path.join(dst, task), exist_ok=True)
    onnx.save(m, os.path.join(dst, task, "model.onnx"))
    man = json.load(open(os.path.join(src, task, "manifest.json")))
    man.setdefault("training", {})["head_scaled_by"] = scale
    json.dump(man, open(os.path.join(dst, task, "manifest.json"), "w"), indent=2)
    return dst


def member_weights(k: int, weight_new: float) -> list[float]:
    """Shares of the fused log-probability: weight_new for the new (last) member, the rest split equally."""
    return [(1 - weight_new) / (k - 1)] * (k - 1) + [weight_new]


def weighted(task: str, dirs: list[str], weights: list[float], version: str, work: str = MEMBER_DIRS) -> list[str]:
    """The members with heads scaled by k * weight, so that the fused file (plain mean over k members) gives
    member i the share weights[i] of the fused log-probability."""
    return [scale_head(d, os.path.join(work, f"{task}_{version}_member{j + 1}_weighted"), task, len(dirs) * w)
            for j, (d, w) in enumerate(zip(dirs, weights))]


def previous_rows(task: str, shipped: str) -> dict:
    """The shipped file's validation rows (its metrics.json: same clips, same evaluation code) for the new card."""
    d = os.path.join(shipped, task)
    man = json.load(open(os.path.join(d, "manifest.json")))
    version, members = man["version"], len(man["training"]["ensemble_of"])
    res = json.load(open(os.path.join(d, "metrics.json")))
    rows = {f"{version} (previous release = members 1-{members}): all validation": res["overall"]}
    rows.update({f"{version}: {s}": r for s, r in res["per_source"].items()})
    return {"description": f"the same {res['overall']['n_clips']} validation clips scored, with the same evaluation "
                           f"code, by the previous release {version}.", "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge", help="members -> one file")
    m.add_argument("--members", nargs="+", required=True, help="run folders holding <task>/model.onnx + manifest.json")
    a = sub.add_parser("add", help="a new member joins a shipped fused ensemble")
    a.add_argument("--shipped", default="models", help="folder holding <task>/ of the shipped fused ensemble")
    a.add_argument("--new", required=True, help="run folder holding <task>/ of the new member")
    a.add_argument("--weight-new", type=float, default=None,
                   help="share of the new member in the fused log-probability (default: all members alike)")
    for p in (m, a):
        p.add_argument("--task", required=True, choices=list(CLASSES))
        p.add_argument("--out", required=True)
        p.add_argument("--version", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "merge":
        build(args.task, args.members, args.out, args.version)
        return
    if args.weight_new is not None and not 0 < args.weight_new < 1:
        ap.error("--weight-new must lie strictly between 0 and 1")
    members = member_dirs(args.task, args.shipped, args.new)
    weights, merged_by = None, f"python -m training.export.ensemble add --task {args.task} --new {args.new} --version {args.version}"
    if args.weight_new is not None:
        weights, merged_by = member_weights(len(members), args.weight_new), merged_by + f" --weight-new {args.weight_new:g}"
        members = weighted(args.task, members, weights, args.version)
    build(args.task, members, args.out, args.version, weights=weights, merged_by=merged_by,
          reference=previous_rows(args.task, args.shipped))


if __name__ == "__main__":
    main()
