"""Adds a member to a shipped fused ensemble whose members are as wide as the new one or narrower.

    python -m training.ensemble_add --task gender --new training/runs/g13 --version 1.3.0 --out models [--weight-new 0.5]

The shipped file's members are taken back out of its grouped convolutions (ensemble.fuse wrote them member by
member) and zero-padded to the new member's width: a padded channel has zero weights and bias, so it stays 0
through every ReLU and residual sum and the head ignores it; the padded member computes exactly what it did.
Then all of them go through ensemble.build like freshly trained members (fused again, checked against the
members, evaluated, card written).  Why not retrain the old members: gender 1.2.0's two members were chosen on
validation and only member 1 re-trains bit-identically; this keeps them exactly as users have them.

`--weight-new W` gives the new member the share W of the fused log-probability (the shipped members share the
rest equally; default: every member alike).  The fused file takes the plain mean of its members'
log-softmaxes, and log_softmax(z) differs from z by a constant over the classes, so softmax(mean_i s_i z_i) =
softmax(sum_i w_i log p_i) when member i's head (weights and bias) is scaled by s_i = k w_i: exact, with the
same graph.  W = 0.5 weighs the new member as much as the shipped file (added_member_loco --old-members 1).
"""
from __future__ import annotations

import argparse
import copy
import json
import os

import numpy as np

from . import ensemble as E

MEMBER_DIRS = "training/runs/ensemble_add"


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


def member_dirs(task: str, shipped: str, new: str) -> list[str]:
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
        d = os.path.join(MEMBER_DIRS, f"{task}_{man['version']}_member{j + 1}")
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
    E.check_merged([os.path.join(d, task, "model.onnx") for d in dirs], os.path.join(shipped, task, "model.onnx"),
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


def weighted(task: str, dirs: list[str], weights: list[float], version: str) -> list[str]:
    """The members with heads scaled by k * weight, so that the fused file (plain mean over k members) gives
    member i the share weights[i] of the fused log-probability."""
    return [scale_head(d, os.path.join(MEMBER_DIRS, f"{task}_{version}_member{j + 1}_weighted"), task, len(dirs) * w)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True)
    ap.add_argument("--shipped", default="models", help="folder holding <task>/ of the shipped fused ensemble")
    ap.add_argument("--new", required=True, help="run folder holding <task>/ of the new member")
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--weight-new", type=float, default=None,
                    help="share of the new member in the fused log-probability (default: all members alike)")
    a = ap.parse_args()
    if a.weight_new is not None and not 0 < a.weight_new < 1:
        ap.error("--weight-new must lie strictly between 0 and 1")
    members = member_dirs(a.task, a.shipped, a.new)
    weights, merged_by = None, f"python -m training.ensemble_add --task {a.task} --new {a.new} --version {a.version}"
    if a.weight_new is not None:
        weights, merged_by = member_weights(len(members), a.weight_new), merged_by + f" --weight-new {a.weight_new:g}"
        members = weighted(a.task, members, weights, a.version)
    E.build(a.task, members, a.out, a.version, weights=weights, merged_by=merged_by,
            reference=previous_rows(a.task, a.shipped))


if __name__ == "__main__":
    main()
