"""Emotions 1.1.0: the emotions network's probabilities weighed by arousal 1.0.0's opinion, in one graph.

    python -m training.export.emotions_fuse --emotions <folder with emotions 1.0.0> --arousal <folder with arousal 1.0.0> --out models

Leave-one-corpus-out, every view of a clip recognises `tired` (sad) badly in a corpus it never heard (recall about
0.1), while arousal 1.0.0 - trained on two corpora only - recognises low arousal there far better (recall 0.63).
Each emotion class has one arousal (happy, irritated: high; neutral: neutral; tired: low), so the fused
distribution is the normalised product P(class) * P_arousal(arousal of class)^w, per step, before any
post-processing: softmax(log p_emotions + w log(p_arousal M)).  Both networks see the same features with the
same context (24 steps each side), so the fused graph keeps the emotions model's shape, and the streaming graphs
are the two models' streaming graphs side by side, their states concatenated.
"""
from __future__ import annotations

import argparse
import copy
import json
import os

import numpy as np
import onnx
from onnx import compose, helper, numpy_helper

from training.data import bank as B
from training.data import speakers as SD

VERSION = "1.1.0"
EPS = 1e-7
# the arousal of each emotions class (data/speakers.EMOTION_CLASSES order)
AROUSAL_OF = {"happy": "high", "irritated": "high", "neutral": "neutral", "tired": "low"}


def arousal_map(arousal_keys) -> np.ndarray:
    """[arousal classes, emotion classes]: 1 where the emotion class has that arousal."""
    m = np.zeros((len(arousal_keys), len(SD.EMOTION_CLASSES)), dtype=np.float32)
    for j, e in enumerate(SD.EMOTION_CLASSES):
        m[arousal_keys.index(AROUSAL_OF[e]), j] = 1.0
    return m


def _glue(e_probs, a_probs, out, mt, weight):
    """Nodes and constants for softmax(log(e + eps) + w log(a M + eps))."""
    inits = [numpy_helper.from_array(mt, "f_map"), numpy_helper.from_array(np.array(EPS, np.float32), "f_eps"),
             numpy_helper.from_array(np.array(weight, np.float32), "f_w")]
    nodes = [helper.make_node("MatMul", [a_probs, "f_map"], ["f_a_on_e"]),
             helper.make_node("Add", ["f_a_on_e", "f_eps"], ["f_a_eps"]),
             helper.make_node("Log", ["f_a_eps"], ["f_a_log"]),
             helper.make_node("Mul", ["f_a_log", "f_w"], ["f_a_wlog"]),
             helper.make_node("Add", [e_probs, "f_eps"], ["f_e_eps"]),
             helper.make_node("Log", ["f_e_eps"], ["f_e_log"]),
             helper.make_node("Add", ["f_e_log", "f_a_wlog"], ["f_logits"]),
             helper.make_node("Softmax", ["f_logits"], [out], axis=-1)]
    return nodes, inits


def fuse_graphs(e_path, a_path, out_path, mt, weight, state_sizes=None):
    """One graph from the emotions and arousal graphs (whole-file, or streaming when `state_sizes` is given)."""
    e, a = compose.add_prefix(onnx.load(e_path), "e_"), compose.add_prefix(onnx.load(a_path), "a_")
    feat = next(i for i in e.graph.input if i.name == "e_features")
    nodes = [helper.make_node("Identity", ["features"], ["e_features"]),
             helper.make_node("Identity", ["features"], ["a_features"])]
    inits = list(e.graph.initializer) + list(a.graph.initializer)
    inputs = [helper.make_tensor_value_info("features", onnx.TensorProto.FLOAT, [d.dim_param or d.dim_value for d in feat.type.tensor_type.shape.dim])]
    outputs = [helper.make_tensor_value_info("probs", onnx.TensorProto.FLOAT, ["B", "S", len(SD.EMOTION_CLASSES)])]
    if state_sizes:
        ne, na = state_sizes
        inputs.append(helper.make_tensor_value_info("state", onnx.TensorProto.FLOAT, ["B", ne + na]))
        outputs.append(helper.make_tensor_value_info("state_out", onnx.TensorProto.FLOAT, ["B", ne + na]))
        for name, lo, hi in (("e_state", 0, ne), ("a_state", ne, ne + na)):
            inits += [numpy_helper.from_array(np.array([lo], np.int64), f"f_{name}_lo"),
                      numpy_helper.from_array(np.array([hi], np.int64), f"f_{name}_hi"),
                      numpy_helper.from_array(np.array([1], np.int64), f"f_{name}_ax")]
            nodes.append(helper.make_node("Slice", ["state", f"f_{name}_lo", f"f_{name}_hi", f"f_{name}_ax"], [name]))
    nodes += list(e.graph.node) + list(a.graph.node)
    if state_sizes:
        nodes.append(helper.make_node("Concat", ["e_state_out", "a_state_out"], ["state_out"], axis=1))
    glue, glue_inits = _glue("e_probs", "a_probs", "probs", mt, weight)
    graph = helper.make_graph(nodes + glue, "emotions_fused", inputs, outputs, inits + glue_inits)
    model = helper.make_model(graph, opset_imports=list(e.opset_import))
    model.ir_version = max(e.ir_version, a.ir_version)
    onnx.checker.check_model(model)
    onnx.save(model, out_path)


def reproduce_cmd(e_version, a_version, weight, loco_runs=None) -> str:
    # both inputs by version: models/ moves on (arousal 1.0.1 raised its neutral logit after this fusion)
    return (f"python -m training.export.emotions_fuse --emotions <folder holding emotions {e_version} (git history of "
            f"models/emotions)> --arousal <folder holding arousal {a_version} (git history of models/arousal)> "
            f"--weight {weight:g}" + (f" --loco-runs {loco_runs}" if loco_runs else ""))


def fuse(e_dir, a_dir, out_dir, weight=1.0, loco_runs=None):
    import tempfile
    from training.export.streaming import check, export
    em, am = (json.load(open(os.path.join(d, "manifest.json"))) for d in (e_dir, a_dir))
    if em["context"] != am["context"] or em["streaming"]["start_steps"] != am["streaming"]["start_steps"]:
        raise ValueError("the two models must have the same context and streaming start")
    mt = arousal_map(am["raw_keys"])
    os.makedirs(out_dir, exist_ok=True)
    fuse_graphs(os.path.join(e_dir, "model.onnx"), os.path.join(a_dir, "model.onnx"), os.path.join(out_dir, "model.onnx"), mt, weight)
    with tempfile.TemporaryDirectory() as tmp:
        # each network's streaming graphs exported afresh from its model.onnx, so the fused ones always have the
        # current streaming form (an input folder from git history holds the form of its day)
        st = {}
        for key, d in (("e", e_dir), ("a", a_dir)):
            os.makedirs(os.path.join(tmp, key))
            st[key] = export(os.path.join(d, "model.onnx"), os.path.join(tmp, key))
            if st[key]["state_size"] != (em if key == "e" else am)["streaming"]["state_size"]:
                raise ValueError(f"{d}: the fresh streaming export's state differs from the manifest's")
        sizes = (st["e"]["state_size"], st["a"]["state_size"])
        for f in ("file", "start_file"):
            fuse_graphs(os.path.join(tmp, "e", st["e"][f]), os.path.join(tmp, "a", st["a"][f]),
                        os.path.join(out_dir, em["streaming"][f]), mt, weight, sizes)
    m = copy.deepcopy(em)
    m["version"] = VERSION
    m["streaming"]["state_size"] = sum(sizes)
    m["streaming"]["vs_model_max_abs_diff"] = check(os.path.join(out_dir, "model.onnx"), m["streaming"])
    m["model"] = {"parameters": em["model"]["parameters"] + am["model"]["parameters"],
                  "macs_per_step": em["model"]["macs_per_step"] + am["model"]["macs_per_step"], "onnx_opset": 17,
                  "architecture": f"emotions {em['version']} ({em['model']['architecture']}) weighed by arousal "
                                  f"{am['version']} ({am['model']['architecture']}): softmax(log p + {weight:g} log "
                                  f"p_arousal(arousal of the class)), one graph",
                  "onnx_vs_torch_max_abs_diff": em["model"]["onnx_vs_torch_max_abs_diff"]}
    m["training"]["fused"] = {"by": reproduce_cmd(em["version"], am["version"], weight, loco_runs), "arousal_version": am["version"],
                              "weight": weight, "arousal_of": AROUSAL_OF}
    with open(os.path.join(out_dir, "manifest.json"), "w") as fh:
        json.dump(m, fh, indent=2)
        fh.write("\n")
    return m


def heldout_metrics(out_dir, bank, clips):
    """metrics.json of the fused model: the held-out speakers of the emotions split, clean and telephone."""
    import onnxruntime as ort
    from training.validate.loco_report import onnx_clip_probs
    from training.recipes.speaker import heldout_report
    sess = ort.InferenceSession(os.path.join(out_dir, "model.onnx"), providers=["CPUExecutionProvider"])
    res = heldout_report("emotions", SD.clips_of("emotions", clips, split_name="val"),
                         lambda cl, version: onnx_clip_probs(sess, bank, [(c, version) for c in cl]))
    with open(os.path.join(out_dir, "metrics.json"), "w") as fh:
        json.dump(res, fh, indent=2)
        fh.write("\n")
    return res


def loco_estimate(runs, a_dir, bank, clips, weight=1.0, corpora=("ased", "ettsdb", "nemo", "urdu")):
    """Leave-one-corpus-out estimate of the fusion, step by step as the graph does it: each corpus scored by the
    emotions model trained without it (training/validate/loco.py's fold checkpoints in `runs`) weighed by arousal 1.0.0,
    which never heard these corpora either (it learnt from RAVDESS and BAVED)."""
    import onnxruntime as ort
    import torch
    from training.models.net import Net
    from training.models.configs import SPEAKER as CONFIGS
    from training.recipes.speaker import scores
    am = json.load(open(os.path.join(a_dir, "manifest.json")))
    mt = arousal_map(am["raw_keys"])
    sess = ort.InferenceSession(os.path.join(a_dir, "model.onnx"), providers=["CPUExecutionProvider"])
    out = {}
    for corpus in corpora:
        net = Net(len(SD.EMOTION_CLASSES), **CONFIGS["emotions"])
        net.load_state_dict(torch.load(os.path.join(runs, "emotions", f"{corpus}.pt")))
        net.eval()
        held = SD.clips_of("emotions", clips, corpora=[corpus])
        out[corpus] = {}
        for version in ("clean", "phone"):
            probs, alone = [], []
            for c, _ in held:
                i = bank.find(c, version)
                f, v = bank.features(i), bank.voiced_of(i)
                with torch.no_grad():
                    pe = net(torch.from_numpy(f.astype(np.float32))[None])[0].numpy()
                pa = sess.run(None, {"features": f.astype(np.float32)[None]})[0][0] @ mt
                lg = np.log(pe + EPS) + weight * np.log(pa + EPS)
                pf = np.exp(lg - lg.max(-1, keepdims=True))
                pf /= pf.sum(-1, keepdims=True)
                probs.append(B.voiced_mean(pf, v))
                alone.append(B.voiced_mean(pe, v))
            ys = [y for _, y in held]
            out[corpus][version] = {"fused": scores("emotions", ys, probs), "emotions_alone": scores("emotions", ys, alone)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--emotions", required=True, help="folder of the emotions model to fuse (1.0.0)")
    ap.add_argument("--arousal", required=True, help="folder with the arousal model to weigh by (1.0.0 for emotions 1.1.0)")
    ap.add_argument("--out", default="models", help="folder that gets emotions/")
    ap.add_argument("--weight", type=float, default=1.0)
    ap.add_argument("--loco-runs", default=None, help="also estimate it leave-one-corpus-out from these fold checkpoints "
                                                       "(training/validate/loco.py --task emotions --runs ...) -> <out>/emotions/loco_fused.json")
    a = ap.parse_args(argv)
    from training.data import clips as D
    out = os.path.join(a.out, "emotions")
    m = fuse(a.emotions, a.arousal, out, a.weight, a.loco_runs)
    print(json.dumps(m["streaming"], indent=1))
    clips = D.load_clips()
    bank = B.build(clips)
    print(json.dumps(heldout_metrics(out, bank, clips)["clean"]["overall"]))
    if a.loco_runs:
        est = loco_estimate(a.loco_runs, a.arousal, bank, clips, a.weight)
        with open(os.path.join(out, "loco_fused.json"), "w") as fh:
            json.dump({"weight": a.weight, "runs": a.loco_runs, "folds": est}, fh, indent=1)
            fh.write("\n")
        for c, r in est.items():
            print(c, "fused", r["clean"]["fused"]["uar"], "alone", r["clean"]["emotions_alone"]["uar"],
                  "phone", r["phone"]["fused"]["uar"], r["phone"]["emotions_alone"]["uar"])


if __name__ == "__main__":
    main()
