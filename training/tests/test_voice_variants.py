"""WORLD variants move F0 by the drawn ratio and keep length and level sane (synthetic voice, no dataset)."""
import numpy as np
import pytest

pw = pytest.importorskip("pyworld")

from training.data import voice_variants as V


def pulse_voice(f0=120.0, sr=16000, seconds=1.0):
    """Glottal-pulse train through two formant resonators: a crude vowel with a known F0."""
    from scipy import signal
    n = int(sr * seconds)
    x = np.zeros(n)
    x[(np.arange(0, seconds, 1 / f0) * sr).astype(int)] = 1.0
    for fc, bw in ((700, 110), (1200, 120)):
        r = np.exp(-np.pi * bw / sr)
        x = signal.lfilter([1 - r], [1, -2 * r * np.cos(2 * np.pi * fc / sr), r * r], x)
    return (x / np.abs(x).max() * 0.5 * 32767).astype(np.int16)


def median_f0(x16):
    x = x16.astype(np.float64) / 32768
    f0, _ = pw.dio(x, 16000, f0_floor=60, f0_ceil=600)
    return float(np.median(f0[f0 > 0]))


def test_variants_shift_pitch_by_the_drawn_ratio():
    x = pulse_voice(120.0)
    out = V.make_variants((x, ((2.0, 2.0001), (0.8, 0.8001)), 0.0, 1))
    assert len(out) == 2
    assert all(v.size == x.size and v.dtype == np.int16 for v in out)
    assert abs(median_f0(x) - 120) < 6
    assert abs(median_f0(out[0]) - 240) < 15
    assert abs(median_f0(out[1]) - 96) < 8
    assert all(np.abs(v).max() > 1000 for v in out)


def test_too_short_clips_get_no_variants():
    assert V.make_variants((np.zeros(100, dtype=np.int16), V.RATIOS["male"], V.WARP, 1)) == []
