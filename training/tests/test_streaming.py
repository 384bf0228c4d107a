"""The stateful streaming graphs (training/streaming.py): the committed stream.onnx of every shipped model gives
the whole-file model's outputs for any chunking, and a fresh export from model.onnx does too."""
import json
import os
import shutil

import numpy as np
import onnxruntime as ort
import pytest

from training import streaming

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TASKS = ["speech", "gender", "arousal"]


def _manifest(task):
    with open(os.path.join(ROOT, "models", task, "manifest.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("task", TASKS)
def test_committed_graph_equals_model(task):
    m = _manifest(task)
    st = m["streaming"]
    assert st["delay_steps"] == m["context"]["right_steps"]
    assert st["exact_from_step"] == m["context"]["left_steps"]
    d = os.path.join(ROOT, "models", task)
    assert streaming.check(os.path.join(d, m["file"]), os.path.join(d, st["file"]), st, steps=120) < 1e-4


@pytest.mark.parametrize("task", TASKS)
def test_fresh_export(tmp_path, task):
    m = _manifest(task)
    d = tmp_path / task
    d.mkdir()
    shutil.copy(os.path.join(ROOT, "models", task, m["file"]), d / m["file"])
    section = streaming.add_streaming(str(d), m)
    assert section["state_size"] == _manifest(task)["streaming"]["state_size"]
    assert section["vs_model_max_abs_diff"] < 1e-4


def test_early_outputs_are_dropped_for_a_reason():
    """Outputs before exact_from_step do differ (zero padding is not reproduced): the service must not use them."""
    m = _manifest("speech")
    d = os.path.join(ROOT, "models", "speech")
    st = m["streaming"]
    full = ort.InferenceSession(os.path.join(d, m["file"]), providers=["CPUExecutionProvider"])
    stream = ort.InferenceSession(os.path.join(d, st["file"]), providers=["CPUExecutionProvider"])
    x = streaming.test_signal(80, 3)
    ref = full.run(None, {"features": x})[0][0]
    got = streaming.stream_run(stream, x, [1] * 80, st["state_size"])
    L = st["delay_steps"]
    assert np.abs(got[L:L + st["exact_from_step"]] - ref[:st["exact_from_step"]]).max() > 1e-3
