"""The stateful streaming graphs (training/export/streaming.py): the committed stream_start.onnx + stream.onnx of every
shipped model give the whole-file model's outputs for any chunking, and a fresh export from model.onnx does too."""
import json
import os
import shutil

import numpy as np
import onnxruntime as ort
import pytest

from training.export import streaming

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TASKS = ["speech", "gender", "arousal"]


def _manifest(task):
    with open(os.path.join(ROOT, "models", task, "manifest.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("task", TASKS + ["emotions"])
def test_committed_graphs_equal_model(task):
    m = _manifest(task)
    st = m["streaming"]
    assert st["delay_steps"] == m["context"]["right_steps"]
    assert streaming.check(os.path.join(ROOT, "models", task, m["file"]), st, steps=120) < 1e-4


@pytest.mark.parametrize("task", TASKS)
def test_fresh_export(tmp_path, task):
    m = _manifest(task)
    d = tmp_path / task
    d.mkdir()
    shutil.copy(os.path.join(ROOT, "models", task, m["file"]), d / m["file"])
    section = streaming.add_streaming(str(d), m)
    assert section["state_size"] == _manifest(task)["streaming"]["state_size"]
    assert section["vs_model_max_abs_diff"] < 1e-4


def test_the_start_graph_is_needed():
    """The steady graph alone, from a zero state, gets the first steps wrong (it does not reproduce the zero
    padding at the signal start): that is what the masked start graph is for."""
    m = _manifest("speech")
    d = os.path.join(ROOT, "models", "speech")
    st = m["streaming"]
    full = ort.InferenceSession(os.path.join(d, m["file"]), providers=["CPUExecutionProvider"])
    steady = ort.InferenceSession(os.path.join(d, st["file"]), providers=["CPUExecutionProvider"])
    x = streaming.test_signal(80, 3)
    ref = full.run(None, {"features": x})[0][0]
    got = streaming.stream_run(steady, steady, x, [1] * 80, st)
    L = st["delay_steps"]
    assert np.abs(got[L:L + 5] - ref[:5]).max() > 1e-3
