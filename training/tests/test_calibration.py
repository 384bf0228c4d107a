"""The confidence temperature (validate/calibration.py): the tempering the service applies, and a fit that finds a
known overconfidence. No datasets needed."""
import json
from pathlib import Path

import numpy as np

from training.validate import calibration as K

ROOT = Path(__file__).resolve().parents[2]


def test_tempering_keeps_the_label_and_softens():
    p = np.array([[0.6, 0.3, 0.1], [0.05, 0.9, 0.05], [1.0, 0.0, 0.0]])
    assert np.allclose(K.tempered(p, 1.0), p, atol=1e-9)
    t = K.tempered(p, 2.0)
    assert (t.argmax(1) == p.argmax(1)).all()
    assert np.allclose(t[0], np.sqrt(p[0]) / np.sqrt(p[0]).sum())  # postprocess.test.ts checks the same value
    assert (t.max(1) < p.max(1)).all() and np.allclose(t.sum(1), 1)


def test_fit_finds_a_known_overconfidence():
    rng = np.random.default_rng(0)
    by = {}
    for c in range(3):
        z = rng.normal(0, 1.0, (4000, 3))
        q = np.exp(z) / np.exp(z).sum(1, keepdims=True)  # how often each class is really right
        y = np.array([rng.choice(3, p=row) for row in q])
        p = np.exp(4 * z) / np.exp(4 * z).sum(1, keepdims=True)  # a network 4x too sure
        by[f"c{c}"] = [{"probs": p[i:i + 1], "y": int(y[i]), "short": False} for i in range(len(y))]
    t = K.fit(by)
    assert 3.4 < t < 4.6, t
    probs, y = K._pool(by["c0"])
    assert K.calibration(probs, y, t)["ece"] < K.calibration(probs, y, 1.0)["ece"] / 3


def test_shipped_files_are_what_the_registry_reads():
    for task in K.CLASSES:
        z = json.loads((ROOT / "models" / task / "calibration.json").read_text())
        assert 0.05 <= z["shipped"]["temperature"] <= 100  # src/inference/registry.ts readConfidenceTemperature
        assert set(z["corpora"]) == set(K.UNHEARD[task])
