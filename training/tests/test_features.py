import json
import math
import os

import numpy as np

from training import features as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_golden_matches_current_code():
    d = json.load(open(os.path.join(ROOT, "test/fixtures/features_golden.json")))
    x = np.array(d["samples"], dtype=np.float32)
    assert d["steps"] == F.num_steps(x.size) == len(d["levels"])
    assert len(d["features"]) == 4 * d["steps"]
    np.testing.assert_allclose(F.logmel(x), np.array(d["features"]), atol=1e-5)
    np.testing.assert_allclose(F.step_levels(x), np.array(d["levels"]), atol=1e-5)


def test_brute_force_frame():
    x = F.golden_signal().astype(np.float64)
    feats = F.logmel(x)
    w = np.array([0.5 - 0.5 * math.cos(2 * math.pi * k / 512) for k in range(512)])
    for f in (0, 7, feats.shape[0] - 1):
        seg = np.array([x[256 * f - 128 + k] if 0 <= 256 * f - 128 + k < x.size else 0.0 for k in range(512)])
        P = np.abs(np.fft.fft(seg * w))[:257] ** 2
        np.testing.assert_allclose(np.log(F.mel_filterbank() @ P + 1e-8), feats[f], atol=1e-9)


def test_levels_and_sizes():
    assert F.num_steps(1) == 1 and F.num_steps(1024) == 1 and F.num_steps(1025) == 2
    t = np.arange(16000) / 16000
    lv = F.step_levels(np.sin(2 * math.pi * 1000 * t))
    assert abs(lv[3] + 3.0103) < 1e-3
    assert F.step_levels(np.zeros(100))[0] == -120.0


def test_filterbank_edges():
    W = F.mel_filterbank()
    assert W.shape == (64, 257)
    assert W[:, 0].sum() == 0  # 0 Hz below 50 Hz
    assert W[:, 256].sum() < 1e-12  # 8000 Hz is the last upper edge (strict <; float rounding may leave ~1e-15)
    assert W.max() <= 1.0


def test_fast_close():
    x = F.golden_signal()
    np.testing.assert_allclose(F.logmel_fast(x), F.logmel(x), atol=1e-3)
