"""data/pitch.py reads a voice's F0 (the number its report is about)."""
import numpy as np

from training.data import pitch as PE


def test_median_f0_of_a_harmonic_voice_like_tone():
    sr = 16000
    t = np.arange(sr) / sr
    x = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 8)) * 0.1
    assert abs(PE.median_f0(x) - 150) < 5
    assert np.isnan(PE.median_f0(np.zeros(sr)))  # no voiced frame, no pitch
