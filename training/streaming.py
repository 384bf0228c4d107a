"""Stateful streaming export of a shipped model: `models/<task>/stream.onnx` beside `model.onnx`.

    python -m training.streaming --task all [--models models]

The whole-file model is fully convolutional and non-causal: step s depends on steps [s-left, s+right]. A live
stream run through it must re-run a window of left+1+right steps for every new step. The streaming graph computes
the same function incrementally: it takes the features of the N new steps and a state vector, and returns the
probabilities of the N steps that lie `right` steps back (the model's lookahead: latency is unchanged) plus the
new state, which holds what each layer still needs of its past input:

    [raw frames (H), conv1 input (2 frames), conv2 input (2 frames), block i input (2 d_i steps)...]

The graph has no notion of the signal's edges. A stream starts from a zero state, so its outputs for steps
< left (whose receptive field reaches the whole-file model's zero padding) are wrong and are dropped: the service
takes those from the whole-file model (one window at the stream start), and likewise the last `right` steps at
the stream end. Every other output reads only real frames through the same operations as the whole-file graph,
so it is equal to it up to float rounding.

The graph is built from the shipped ONNX file's weights (not from a PyTorch checkpoint), so it works for the
fused gender ensemble too, and it is checked against that file: same probabilities for every chunking.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FRAMES_PER_STEP = 4
N_MELS = 64


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class Parsed:
    """The layer structure of an exported auris model (training/model.py, or its fused ensemble)."""

    def __init__(self, path: str):
        import onnx
        from onnx import numpy_helper
        m = onnx.load(path)
        inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        nodes = list(m.graph.node)
        ops = [n.op_type for n in nodes]
        i = 0

        def expect(op):
            nonlocal i
            if i >= len(nodes) or nodes[i].op_type != op:
                raise ValueError(f"{path}: expected {op} at node {i}, found {ops[i] if i < len(ops) else 'end'}")
            i += 1
            return nodes[i - 1]

        def conv():
            n = expect("Conv")
            a = _attrs(n)
            w = inits[n.input[1]]
            b = inits[n.input[2]] if len(n.input) > 2 else np.zeros(w.shape[0], np.float32)
            k, d = int(a.get("kernel_shape", [w.shape[2]])[0]), int(a.get("dilations", [1])[0])
            if int(a.get("strides", [1])[0]) != 1 or list(a.get("pads", [0, 0])) != [d * (k // 2)] * 2:
                raise ValueError(f"{path}: conv {n.name} is not a centred stride-1 convolution")
            return dict(w=torch.from_numpy(w.copy()), b=torch.from_numpy(b.copy()), group=int(a.get("group", 1)), k=k, d=d)

        expect("Transpose")
        expect("ReduceMean")
        p = expect("AveragePool")
        pa = _attrs(p)
        if pa.get("count_include_pad", 0) != 0:
            raise ValueError(f"{path}: gain normalisation must exclude padding")
        if ops[i] == "MaxPool":
            if pa["kernel_shape"] != [5]:
                raise ValueError(f"{path}: unexpected smoothing before the max normalisation")
            self.norm, self.norm_k = "max", int(_attrs(expect("MaxPool"))["kernel_shape"][0])
        else:
            self.norm, self.norm_k = "mean", int(pa["kernel_shape"][0])
        expect("Sub")
        self.conv1 = conv()
        expect("Relu")
        self.conv2 = conv()
        expect("Relu")
        if _attrs(expect("MaxPool"))["kernel_shape"] != [FRAMES_PER_STEP]:
            raise ValueError(f"{path}: the step pooling must take {FRAMES_PER_STEP} frames")
        self.proj = conv()
        self.blocks = []
        while ops[i] == "Conv":
            self.blocks.append(conv())
            expect("Relu")
            expect("Add")
        expect("Relu")
        self.head = conv()
        if ops[i] == "Reshape":  # fused ensemble head: [B, k*C, S] -> [B, k, C, S], mean of log-softmaxes
            shape = inits[nodes[i].input[1]]
            self.members, self.n_classes = int(shape[1]), int(shape[2])
            expect("Reshape"), expect("LogSoftmax"), expect("ReduceMean")
        else:
            self.members, self.n_classes = 1, int(self.head["w"].shape[0])
        expect("Softmax")
        expect("Transpose")
        if i != len(nodes):
            raise ValueError(f"{path}: unexpected nodes after the output")
        if any(c["k"] != 3 or c["d"] != 1 for c in (self.conv1, self.conv2)) or any(b["k"] != 3 for b in self.blocks):
            raise ValueError(f"{path}: unexpected kernel sizes")
        if self.proj["k"] != 1 or self.head["k"] != 1:
            raise ValueError(f"{path}: projection and head must be 1x1")


class StreamNet(nn.Module):
    """features [B, 4N, 64], state [B, state_size] -> probs [B, N, C] of steps [seen - delay, seen - delay + N), new state.

    No masks: from a zero state the outputs of the first `left` steps are wrong (their receptive field reaches
    into the zero padding, which this graph does not reproduce), every later one is exact, because it reads
    only real frames, through the same operations as the whole-file graph. The caller takes steps < left from
    the whole-file model (one window at the stream start)."""

    def __init__(self, p: Parsed):
        super().__init__()
        self.p = p
        # frames of the gain normalisation's reach on each side (the max variant smooths over 5 frames first)
        self.reach = p.norm_k // 2 + (2 if p.norm == "max" else 0)
        # lag of the normalised input y behind the newest frame: at least the reach, and chosen so that conv2's
        # output (2 frames later) starts on a step boundary
        self.y_lag = FRAMES_PER_STEP * -(-(self.reach + 2) // FRAMES_PER_STEP) - 2
        self.pool_lag = (self.y_lag + 2) // FRAMES_PER_STEP  # steps
        self.hist = self.y_lag + self.reach  # raw frames kept
        self.delay = self.pool_lag + sum(b["d"] for b in p.blocks)
        self.c_in = p.conv1["w"].shape[1] * p.conv1["group"]
        self.c1 = p.conv1["w"].shape[0]
        self.c2 = p.proj["w"].shape[0]
        self.layout = [(N_MELS, self.hist), (self.c_in, 2), (self.c1, 2)] + [(self.c2, 2 * b["d"]) for b in p.blocks]
        self.state_size = sum(c * n for c, n in self.layout)

    @staticmethod
    def _conv(h, c):
        return F.conv1d(h, c["w"], c["b"], dilation=c["d"], groups=c["group"])

    def forward(self, features, state):
        p = self.p
        parts = [t.reshape(-1, c, n) for t, (c, n) in zip(torch.split(state, [c * n for c, n in self.layout], dim=1), self.layout)]
        X = torch.cat([parts[0], features.transpose(1, 2)], dim=2)  # [B, 64, H+4N] raw frames
        e = X.mean(dim=1, keepdim=True)
        if p.norm == "max":
            s = F.avg_pool1d(e, 5, 1, 2, count_include_pad=False)
            m = F.max_pool1d(s, p.norm_k, 1, p.norm_k // 2)
        else:
            m = F.avg_pool1d(e, p.norm_k, 1, p.norm_k // 2, count_include_pad=False)
        y = (X - m)[:, :, self.hist - self.y_lag:-self.y_lag]  # the 4N newest frames whose normalisation is complete
        Y = torch.cat([parts[1], y], dim=2)
        Z1 = torch.cat([parts[2], F.relu(self._conv(Y, p.conv1))], dim=2)
        h = self._conv(F.max_pool1d(F.relu(self._conv(Z1, p.conv2)), FRAMES_PER_STEP, FRAMES_PER_STEP), p.proj)  # [B, c2, N]
        new = [X[:, :, -self.hist:], Y[:, :, -2:], Z1[:, :, -2:]]
        for j, b in enumerate(p.blocks):
            d = b["d"]
            Hc = torch.cat([parts[3 + j], h], dim=2)
            h = Hc[:, :, d:-d] + F.relu(self._conv(Hc, b))
            new.append(Hc[:, :, -2 * d:])
        logits = self._conv(F.relu(h), p.head)  # [B, k*C, N]
        if p.members > 1:
            lp = F.log_softmax(logits.reshape(-1, p.members, p.n_classes, logits.shape[2]), dim=2).mean(dim=1)
            probs = torch.softmax(lp, dim=1)
        else:
            probs = torch.softmax(logits, dim=1)
        return probs.transpose(1, 2), torch.cat([t.flatten(1) for t in new], dim=1)


def export(model_path: str, out_path: str) -> dict:
    """Writes the streaming graph of `model_path` to `out_path`; returns the manifest's `streaming` section."""
    import onnx
    net = StreamNet(Parsed(model_path)).eval()
    x = torch.zeros(1, FRAMES_PER_STEP * 3, N_MELS)
    st = torch.zeros(1, net.state_size)
    torch.onnx.export(net, (x, st), out_path, input_names=["features", "state"], output_names=["probs", "state_out"],
                      opset_version=17, dynamo=False, do_constant_folding=True,
                      dynamic_axes={"features": {0: "B", 1: "T"}, "state": {0: "B"}, "probs": {0: "B", 1: "S"},
                                    "state_out": {0: "B"}})
    onnx.checker.check_model(onnx.load(out_path))
    return {"file": os.path.basename(out_path), "input": "features", "state_input": "state", "output": "probs",
            "state_output": "state_out", "state_size": net.state_size, "delay_steps": net.delay}


def stream_run(sess, x: np.ndarray, chunks: list[int], state_size: int) -> np.ndarray:
    """Feeds x [1, 4S, 64] through a streaming session in chunks of steps; returns the outputs [S, C] in order."""
    st = np.zeros((1, state_size), np.float32)
    outs, s = [], 0
    for n in chunks:
        probs, st = sess.run(None, {"features": x[:, 4 * s:4 * (s + n)], "state": st})
        outs.append(probs[0])
        s += n
    return np.concatenate(outs, 0)


def test_signal(steps: int, seed: int) -> np.ndarray:
    """Log-mel-like features with loud and silent stretches (exercises the gain normalisation)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 4 * steps, N_MELS)).astype(np.float32) * 2 - 6
    level = np.repeat(rng.uniform(-12, 4, size=(4 * steps + 39) // 40), 40)[:4 * steps]
    return (x + level[None, :, None]).astype(np.float32)


def check(model_path: str, stream_path: str, section: dict, steps: int = 200) -> float:
    """Max |streaming - whole-file| over the steps the stream is exact for, for several chunkings (asserts < 1e-4)."""
    import onnxruntime as ort
    full = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    stream = ort.InferenceSession(stream_path, providers=["CPUExecutionProvider"])
    L, first = section["delay_steps"], section["exact_from_step"]
    worst = 0.0
    for seed, chunking in enumerate(([1] * steps, [steps], None, None)):
        x = test_signal(steps, seed)
        ref = full.run(None, {"features": x})[0][0]
        if chunking is None:
            rng = np.random.default_rng(100 + seed)
            chunking, left = [], steps
            while left > 0:
                chunking.append(int(min(left, rng.integers(1, 20))))
                left -= chunking[-1]
        got = stream_run(stream, x, chunking, section["state_size"])
        # output i of the stream is step i - L; steps >= S - L need the end-of-signal padding (not streamed)
        diff = float(np.abs(got[L + first:] - ref[first:steps - L]).max())
        worst = max(worst, diff)
    assert worst < 1e-4, worst
    return worst


def add_streaming(d: str, manifest: dict) -> dict:
    """Writes `<d>/stream.onnx` for the model in `d`, checks it against model.onnx, and returns the manifest's
    `streaming` section (also set in `manifest`)."""
    model_path, out = os.path.join(d, manifest["file"]), os.path.join(d, "stream.onnx")
    section = export(model_path, out)
    if section["delay_steps"] != manifest["context"]["right_steps"]:
        raise ValueError(f"{d}: streaming delay {section['delay_steps']} != right context {manifest['context']['right_steps']}")
    section["exact_from_step"] = manifest["context"]["left_steps"]
    section["vs_model_max_abs_diff"] = check(model_path, out, section)
    manifest["streaming"] = section
    return section


def card_line(manifest: dict) -> str:
    """The model card's line on the streaming graph."""
    st = manifest["streaming"]
    return (f"- Streaming: `{st['file']}` computes the same outputs step by step from a state of {st['state_size']} floats "
            f"(`python -m training.streaming`), {st['delay_steps']} steps behind the input (the lookahead); the service "
            f"uses it for live streams from step {st['exact_from_step']} on (docs/features.md). Max difference from "
            f"`model.onnx` on test signals: {st['vs_model_max_abs_diff']:.1e}.")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="all", help="speech, gender, arousal or all")
    ap.add_argument("--models", default="models")
    args = ap.parse_args(argv)
    tasks = ["speech", "gender", "arousal"] if args.task == "all" else [args.task]
    for t in tasks:
        d = os.path.join(args.models, t)
        mpath = os.path.join(d, "manifest.json")
        with open(mpath) as f:
            manifest = json.load(f)
        section = add_streaming(d, manifest)
        with open(mpath, "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        print(f"[{t}] {d}/stream.onnx: state {section['state_size']} floats, delay {section['delay_steps']} steps, "
              f"max |stream - model| {section['vs_model_max_abs_diff']:.1e}", flush=True)


if __name__ == "__main__":
    main()
