"""The file-path round trips of the speech augmentation (augment.mp3_roundtrip, augment.resample_roundtrip)."""
import numpy as np

from training.data import augment as A


def _speechlike(seconds=3.0):
    """Aperiodic (a periodic tone would make the lag ambiguous): noise below 4 kHz with a 3 Hz syllable envelope."""
    from scipy import signal
    n = int(A.SR * seconds)
    noise = signal.sosfilt(signal.butter(6, 4000, fs=A.SR, output="sos"), np.random.default_rng(9).standard_normal(n))
    t = np.arange(n) / A.SR
    return (0.1 * noise * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def _lag(x, y, most=200):
    """Shift of y against x in samples (positive: y is late)."""
    seg = slice(8000, 24000)
    return max(range(-most, most + 1), key=lambda k: float(np.dot(x[seg], y[seg.start + k:seg.stop + k])))


def test_mp3_roundtrip_keeps_length_level_and_timing():
    x = _speechlike()
    rng = np.random.default_rng(0)
    for _ in range(3):
        y = A.mp3_roundtrip(x, rng)
        assert y.shape == x.shape and y.dtype == np.float32
        assert abs(A.rms_db(y) - A.rms_db(x)) < 1.0
        assert _lag(x, y) == 0  # the codec delay is removed, so per-step labels stay aligned
        assert 0 < np.sqrt(np.mean((y - x) ** 2)) / np.sqrt(np.mean(x ** 2)) < 0.5  # coded, not copied


def test_mp3_roundtrip_of_silence_and_tiny_input():
    rng = np.random.default_rng(1)
    assert not A.mp3_roundtrip(np.zeros(A.SR, np.float32), rng).any()
    assert A.mp3_roundtrip(np.zeros(100, np.float32), rng).shape == (100,)


def test_resample_roundtrip_is_nearly_transparent_below_7_khz():
    x = _speechlike()
    rng = np.random.default_rng(2)
    for _ in range(4):
        y = A.resample_roundtrip(x, rng)
        assert y.shape == x.shape and _lag(x, y) == 0
        assert np.sqrt(np.mean((y - x) ** 2)) / np.sqrt(np.mean(x ** 2)) < 0.02
