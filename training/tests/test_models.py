"""Checks on the shipped ONNX models (models/<task>/): I/O contract, manifest, windowed == whole-file."""
import json
import os

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASKS = {"speech": ["music", "other", "speech"], "gender": ["female", "male"], "arousal": ["high", "low", "neutral"]}
MODELS = os.environ.get("AURIS_MODELS", os.path.join(ROOT, "models"))


def load(task):
    d = os.path.join(MODELS, task)
    man = json.load(open(os.path.join(d, "manifest.json")))
    sess = ort.InferenceSession(os.path.join(d, man["file"]), providers=["CPUExecutionProvider"])
    return man, sess


def run(sess, x):
    return sess.run(["probs"], {"features": x.astype(np.float32)})[0]


def feats(rng, S, B=1):
    # log-mel-like values incl. floor frames (digital silence)
    x = rng.normal(-4.0, 3.0, size=(B, 4 * S, 64))
    x[:, 40:60] = np.log(1e-8)
    return x.astype(np.float32)


@pytest.mark.parametrize("task", TASKS)
def test_manifest(task):
    man, sess = load(task)
    assert man["name"] == task and man["raw_keys"] == TASKS[task]
    assert man["version"] == {"gender": "2.3.0", "speech": "1.1.0", "arousal": "1.0.1"}.get(task, "1.0.0") and man["placeholder"] is False
    assert man["input"] == "features" and man["output"] == "probs"
    f = man["features"]
    assert (f["sample_rate"], f["n_fft"], f["hop"], f["n_mels"], f["fmin"], f["fmax"], f["frames_per_step"]) == \
        (16000, 512, 256, 64, 50, 8000, 4)
    L, R = man["context"]["left_steps"], man["context"]["right_steps"]
    assert man["receptive_field_ms"] == (L + R + 1) * 64
    assert man["lookahead_ms"] == R * 64 + 8
    assert len(man["training_data_sha256"]) == 64
    assert [i.name for i in sess.get_inputs()] == ["features"]
    assert [o.name for o in sess.get_outputs()] == ["probs"]


@pytest.mark.parametrize("task", TASKS)
def test_shapes_and_softmax(task):
    _, sess = load(task)
    rng = np.random.default_rng(0)
    for B, S in ((1, 1), (3, 2), (2, 37)):
        p = run(sess, feats(rng, S, B))
        assert p.shape == (B, S, len(TASKS[task]))
        np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-5)
        assert (p >= 0).all()


@pytest.mark.parametrize("task", TASKS)
def test_windowed_equals_whole(task):
    man, sess = load(task)
    L, R = man["context"]["left_steps"], man["context"]["right_steps"]
    rng = np.random.default_rng(1)
    S = 3 * (L + R) + 40
    x = feats(rng, S)
    whole = run(sess, x)[0]
    # interior window with exactly the declared context
    for a, b in ((L + 5, L + 25), (0, 7), (S - 9, S)):
        lo, hi = max(0, a - L), min(S, b + R)
        part = run(sess, x[:, 4 * lo:4 * hi])[0]
        np.testing.assert_allclose(part[a - lo:b - lo], whole[a:b], atol=2e-5)
    # and the context is exact: a loud burst in step a-L or a+R changes step a's output, one step further out does not
    a = L + 10
    for st, changes in ((a - L, True), (a - L - 1, False), (a + R, True), (a + R + 1, False)):
        y = x.copy()
        y[:, 4 * st:4 * st + 4] += 60.0
        diff = np.abs(run(sess, y)[0][a] - whole[a]).max()
        assert (diff > 1e-6) == changes, (st, a, diff)


def test_lifter_folds_into_the_first_convolution():
    """A lifter member exports as a plain graph (what ensemble fusion and the streaming converter parse)."""
    import torch
    from training.models.net import Net
    from training.models.net import fold_lifter
    torch.manual_seed(0)
    net = Net(2, lifter=12).eval()
    lift = net.lift[:, :, 0]
    assert torch.allclose(lift @ lift, lift, atol=1e-5)  # a projection
    x = torch.randn(2, 120, 64) * 3 - 5
    with torch.no_grad():
        before = net(x)
        fold_lifter(net)
        after = net(x)
    assert net.lifter == 0
    assert (before - after).abs().max() < 1e-5
