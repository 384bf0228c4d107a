"""Stateful streaming export of a shipped model: `models/<task>/stream_start.onnx` and `stream.onnx` beside `model.onnx`.

    python -m training.export.streaming --task all [--models models]

The whole-file model is fully convolutional and non-causal: step s depends on steps [s-left, s+right]. A live
stream run through it must re-run a window of left+1+right steps for every new step. The streaming graphs compute
the same function incrementally: they take the features of the N new steps and a state vector, and return the
probabilities of the N steps that lie `right` steps back (the model's lookahead: latency is unchanged) plus the
new state, which holds what each layer still needs of its past input.

Two graphs share that state: `stream_start.onnx` reproduces the whole-file model's zero padding at the signal start
(masks), and is used until `start_steps` steps have been fed; `stream.onnx` has no masks (they would be all ones by
then) and fewer nodes. Neither can see the signal end: the service runs the whole-file model over the last
`right` steps of a stream (one window), which is exact. Everything else equals the whole-file model up to float
rounding.

The graphs are built from the shipped ONNX file's weights (not from a PyTorch checkpoint), so this works for the
fused gender ensemble too, and they are checked against that file for several chunkings.
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
# The step counter in the state saturates here (it only matters near the stream start; float32 is exact far beyond).
COUNT_CAP = 1.0e6


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class Parsed:
    """The layer structure of an exported auris model (training/models/net.py, or its fused ensemble)."""

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


def _dense(c: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """A conv's weights as one matrix [k * C_in, C_out] over its taps side by side (tap j's channels at j * C_in).
    A grouped conv (the fused ensemble's members) becomes block-diagonal: groups times the multiply-adds, but one
    node instead of a slice, a product and a concat per group: faster up to ~12 streams per call, ~15 % slower at
    32-64 (gender, session 16)."""
    w = c["w"].numpy()
    cout, cg, k = w.shape
    groups = c["group"]
    c_in, og = cg * groups, cout // groups
    m = np.zeros((k * c_in, cout), np.float32)
    for co in range(cout):
        g = co // og
        for j in range(k):
            m[j * c_in + g * cg:j * c_in + (g + 1) * cg, co] = w[co, :, j]
    return torch.from_numpy(m), c["b"]


class StreamNet(nn.Module):
    """features [B, 4N, 64], state [B, state_size] -> probs [B, N, C] of steps [seen - delay, seen - delay + N), new state.

    masked=True is the start graph: every layer input at a negative position (before the signal start) is
    masked to zero, as the whole-file model's zero padding is, and the gain normalisation counts only real
    frames, as its count_include_pad=False does, so it is exact from the first step. Once `start_steps` steps
    have been fed every mask is all ones, and the unmasked graph (fewer nodes: ONNX Runtime's cost at a few
    steps per call is mostly per node) computes the same thing. The state is the same for both:
    [steps fed (capped), raw frames (H), conv1 input (2 frames), conv2 input (2 frames), block i input (2 d_i)...],
    each time-major ([time][channels]).

    Channels last, and every convolution as its taps side by side times one matrix: ONNX Runtime's Conv runs one
    small matrix product per batch item (a matrix-vector product at one step per stream), while one MatMul over
    batch x time is a single large one, and time slices of time-major tensors copy whole rows. With 12-64 streams
    in a call this is 1.6-3x faster than Conv on channels-first tensors (one stream: about the same;
    docs/streaming.md "The graphs' form")."""

    def __init__(self, p: Parsed, masked: bool):
        super().__init__()
        self.p, self.masked = p, masked
        # frames of the gain normalisation's reach on each side (the max variant smooths over 5 frames first)
        self.reach = p.norm_k // 2 + (2 if p.norm == "max" else 0)
        # lag of the normalised input y behind the newest frame: at least the reach, and chosen so that conv2's
        # output (2 frames later) starts on a step boundary
        self.y_lag = FRAMES_PER_STEP * -(-(self.reach + 2) // FRAMES_PER_STEP) - 2
        self.pool_lag = (self.y_lag + 2) // FRAMES_PER_STEP  # steps
        self.hist = self.y_lag + self.reach  # raw frames kept
        self.delay = self.pool_lag + sum(b["d"] for b in p.blocks)
        # from here on no position the graph touches is before the signal start: the masks are all ones
        self.start_steps = max(self.delay, -(-self.hist // FRAMES_PER_STEP))
        self.c_in = p.conv1["w"].shape[1] * p.conv1["group"]
        self.c1 = p.conv1["w"].shape[0]
        self.c2 = p.proj["w"].shape[0]
        self.layout = [(1, 1), (self.hist, N_MELS), (2, self.c_in), (2, self.c1)] + [(2 * b["d"], self.c2) for b in p.blocks]
        self.state_size = sum(t * c for t, c in self.layout)
        self.mats = {id(c): _dense(c) for c in [p.conv1, p.conv2, p.proj, p.head] + p.blocks}

    def _conv(self, h, c):
        """Valid (unpadded) convolution of time-major h [B, L, C_in] -> [B, L - d(k-1), C_out]."""
        w, b = self.mats[id(c)]
        k, d = c["k"], c["d"]
        if k > 1:
            h = torch.cat([h[:, j * d:-(k - 1 - j) * d] if j < k - 1 else h[:, j * d:] for j in range(k)], dim=2)
        return torch.matmul(h, w) + b

    def forward(self, features, state):
        p = self.p
        parts = [t.reshape(-1, n, c) for t, (n, c) in zip(torch.split(state, [n * c for n, c in self.layout], dim=1), self.layout)]
        count = parts[0]  # [B, 1, 1] steps fed before this chunk
        X = torch.cat([parts[1], features], dim=1)  # [B, H+4N, 64] raw frames
        T = X.shape[1]
        lo = self.hist - self.y_lag  # y is computed for X[lo:T - y_lag]: the 4N newest frames whose normalisation is complete
        e = X.mean(dim=2, keepdim=True).transpose(1, 2)  # [B, 1, T]
        if self.masked:
            idx = torch.cumsum(torch.ones_like(e), dim=2) - 1
            valid = (idx + count * FRAMES_PER_STEP - self.hist >= 0).to(X.dtype)  # [B, 1, T]: frame position >= 0
            if p.norm == "max":
                s = F.avg_pool1d(e * valid, 5, 1, 2) / F.avg_pool1d(valid, 5, 1, 2).clamp_min(1e-6)
                s = torch.where(valid > 0, s, torch.full_like(s, -1e30))
                m = F.max_pool1d(s, p.norm_k, 1, p.norm_k // 2)
            else:
                k = p.norm_k
                m = F.avg_pool1d(e * valid, k, 1, k // 2) / F.avg_pool1d(valid, k, 1, k // 2).clamp_min(1e-6)
            vt = valid.transpose(1, 2)  # [B, T, 1]
            y = (X[:, lo:T - self.y_lag] - m.transpose(1, 2)[:, lo:T - self.y_lag]) * vt[:, lo:T - self.y_lag]
        else:
            if p.norm == "max":
                m = F.max_pool1d(F.avg_pool1d(e, 5, 1, 2, count_include_pad=False), p.norm_k, 1, p.norm_k // 2)
            else:
                m = F.avg_pool1d(e, p.norm_k, 1, p.norm_k // 2, count_include_pad=False)
            y = X[:, lo:T - self.y_lag] - m.transpose(1, 2)[:, lo:T - self.y_lag]
        Y = torch.cat([parts[2], y], dim=1)
        z1 = F.relu(self._conv(Y, p.conv1))
        if self.masked:
            z1 = z1 * vt[:, lo - 1:T - self.y_lag - 1]
        Z1 = torch.cat([parts[3], z1], dim=1)
        z2 = F.relu(self._conv(Z1, p.conv2))
        z2 = z2.reshape(z2.shape[0], -1, FRAMES_PER_STEP, z2.shape[2]).amax(dim=2)  # max over each step's 4 frames
        h = self._conv(z2, p.proj)  # [B, N, c2]
        lag = self.pool_lag
        if self.masked:
            sidx = torch.cumsum(torch.ones_like(h[:, :, :1]), dim=1) - 1
            h = h * (sidx + count - lag >= 0).to(h.dtype)  # step position >= 0
        new = [torch.clamp(count + h.shape[1], max=COUNT_CAP), X[:, -self.hist:], Y[:, -2:], Z1[:, -2:]]
        for j, b in enumerate(p.blocks):
            d = b["d"]
            Hc = torch.cat([parts[4 + j], h], dim=1)
            lag += d
            h = Hc[:, d:-d] + F.relu(self._conv(Hc, b))
            if self.masked:
                h = h * (sidx + count - lag >= 0).to(h.dtype)
            new.append(Hc[:, -2 * d:])
        logits = self._conv(F.relu(h), p.head)  # [B, N, k*C]
        if p.members > 1:
            lp = F.log_softmax(logits.reshape(logits.shape[0], -1, p.members, p.n_classes), dim=3).mean(dim=2)
            probs = torch.softmax(lp, dim=2)
        else:
            probs = torch.softmax(logits, dim=2)
        return probs, torch.cat([t.flatten(1) for t in new], dim=1)


def _export_graph(net: StreamNet, out_path: str) -> None:
    import onnx
    x = torch.zeros(1, FRAMES_PER_STEP * 3, N_MELS)
    st = torch.zeros(1, net.state_size)
    torch.onnx.export(net, (x, st), out_path, input_names=["features", "state"], output_names=["probs", "state_out"],
                      opset_version=17, dynamo=False, do_constant_folding=True,
                      dynamic_axes={"features": {0: "B", 1: "T"}, "state": {0: "B"}, "probs": {0: "B", 1: "S"},
                                    "state_out": {0: "B"}})
    onnx.checker.check_model(onnx.load(out_path))


def export(model_path: str, out_dir: str) -> dict:
    """Writes the start graph and the steady graph of `model_path` into `out_dir`; returns the manifest's
    `streaming` section."""
    p = Parsed(model_path)
    nets = {"stream_start.onnx": StreamNet(p, masked=True).eval(), "stream.onnx": StreamNet(p, masked=False).eval()}
    for name, net in nets.items():
        _export_graph(net, os.path.join(out_dir, name))
    net = nets["stream.onnx"]
    return {"file": "stream.onnx", "start_file": "stream_start.onnx", "start_steps": net.start_steps,
            "input": "features", "state_input": "state", "output": "probs", "state_output": "state_out",
            "state_size": net.state_size, "delay_steps": net.delay}


def stream_run(start, steady, x: np.ndarray, chunks: list[int], section: dict) -> np.ndarray:
    """Feeds x [1, 4S, 64] in chunks of steps, through the start graph while fewer than start_steps steps have been
    fed and the steady graph after (as the service does); returns the outputs [S, C] in order."""
    st = np.zeros((1, section["state_size"]), np.float32)
    outs, s = [], 0
    for n in chunks:
        sess = start if s < section["start_steps"] else steady
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


def check(model_path: str, section: dict, steps: int = 200) -> float:
    """Max |streaming - whole-file| over every step a stream computes, for several chunkings (asserts < 1e-4)."""
    import onnxruntime as ort
    d = os.path.dirname(model_path)
    full = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    start, steady = (ort.InferenceSession(os.path.join(d, section[k]), providers=["CPUExecutionProvider"]) for k in ("start_file", "file"))
    L = section["delay_steps"]
    worst = 0.0
    for seed, chunking in enumerate(([1] * steps, [steps], None, None, [section["start_steps"] + 3] + [1] * 20)):
        x = test_signal(steps, seed)
        ref = full.run(None, {"features": x})[0][0]
        if chunking is None:
            rng = np.random.default_rng(100 + seed)
            chunking, left = [], steps
            while left > 0:
                chunking.append(int(min(left, rng.integers(1, 20))))
                left -= chunking[-1]
        got = stream_run(start, steady, x, chunking, section)
        n = min(len(got), steps) - L
        # output i of the stream is step i - L (the first L are before the signal start); steps >= S - L need the
        # end-of-signal padding and are not streamed
        worst = max(worst, float(np.abs(got[L:L + n] - ref[:n]).max()))
    assert worst < 1e-4, worst
    return worst


def add_streaming(d: str, manifest: dict) -> dict:
    """Writes `<d>/stream_start.onnx` and `<d>/stream.onnx` for the model in `d`, checks them against model.onnx,
    and returns the manifest's `streaming` section (also set in `manifest`)."""
    model_path = os.path.join(d, manifest["file"])
    section = export(model_path, d)
    if section["delay_steps"] != manifest["context"]["right_steps"]:
        raise ValueError(f"{d}: streaming delay {section['delay_steps']} != right context {manifest['context']['right_steps']}")
    section["vs_model_max_abs_diff"] = check(model_path, section)
    manifest["streaming"] = section
    return section


def card_line(manifest: dict) -> str:
    """The model card's line on the streaming graphs."""
    st = manifest.get("streaming")
    if not st:
        return "- Streaming: no stateful graphs (this graph shape is not supported by `training/export/streaming.py`); live streams run it windowed."
    return (f"- Streaming: `{st['start_file']}` (first {st['start_steps']} steps) and `{st['file']}` compute the same outputs "
            f"step by step from a state of {st['state_size']} floats (`python -m training.export."
            f"{'emotions_fuse' if manifest.get('training', {}).get('fused') else 'streaming'}`), {st['delay_steps']} "
            f"steps behind the input (the lookahead); the service runs live streams through them (docs/features.md). "
            f"Max difference from `model.onnx` on test signals: {st['vs_model_max_abs_diff']:.1e}.")


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
        print(f"[{t}] {d}/stream*.onnx: start {section['start_steps']} steps, state {section['state_size']} floats, delay {section['delay_steps']} steps, "
              f"max |stream - model| {section['vs_model_max_abs_diff']:.1e}", flush=True)


if __name__ == "__main__":
    main()
