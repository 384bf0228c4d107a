"""Reference (numpy) implementation of the auris front end, see docs/features.md.

Float64 internally. `python -m training.features --golden PATH` writes the golden
fixture used by the C++ addon tests.
"""
from __future__ import annotations

import argparse
import json
import math

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 512
HOP = 256
N_MELS = 64
FMIN = 50.0
FMAX = 8000.0
LOG_FLOOR = 1e-8
FRAMES_PER_STEP = 4
STEP = HOP * FRAMES_PER_STEP  # 1024 samples = 64 ms


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (np.asarray(m, dtype=np.float64) / 2595.0) - 1.0)


def mel_filterbank() -> np.ndarray:
    """[64, 257] float64 HTK triangular weights, no area normalisation."""
    edges = mel_to_hz(np.linspace(hz_to_mel(FMIN), hz_to_mel(FMAX), N_MELS + 2))
    fb = np.arange(N_FFT // 2 + 1, dtype=np.float64) * (SAMPLE_RATE / N_FFT)
    W = np.zeros((N_MELS, fb.size), dtype=np.float64)
    for m in range(N_MELS):
        l, c, u = edges[m], edges[m + 1], edges[m + 2]
        up = (fb > l) & (fb <= c)
        W[m, up] = (fb[up] - l) / (c - l)
        down = (fb > c) & (fb < u)
        W[m, down] = (u - fb[down]) / (u - c)
    return W


def hann() -> np.ndarray:
    k = np.arange(N_FFT, dtype=np.float64)
    return 0.5 - 0.5 * np.cos(2.0 * math.pi * k / N_FFT)


_W = mel_filterbank()
_WIN = hann()


def num_steps(n: int) -> int:
    return -(-n // STEP)


def step_levels(x: np.ndarray) -> np.ndarray:
    """Per-step level in dBFS (partial last step averages over its real samples)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    S = num_steps(n)
    out = np.empty(S, dtype=np.float64)
    for s in range(S):
        seg = x[s * STEP:(s + 1) * STEP]
        out[s] = 10.0 * np.log10(np.mean(seg * seg) + 1e-12)
    return out


def frames(x: np.ndarray) -> np.ndarray:
    """[4*S, 512] frames: frame f = x[256 f - 128 + k], zeros outside [0, n)."""
    x = np.asarray(x, dtype=np.float64)
    S = num_steps(x.size)
    F = S * FRAMES_PER_STEP
    total = HOP * (F - 1) + N_FFT  # last sample index needed + 1 (relative to -128)
    padded = np.zeros(total, dtype=np.float64)
    m = min(x.size, total - 128)
    padded[128:128 + m] = x[:m]
    idx = np.arange(F)[:, None] * HOP + np.arange(N_FFT)[None, :]
    return padded[idx]


def logmel(x: np.ndarray, dtype=np.float64) -> np.ndarray:
    """[4*S, 64] log-mel features, time-major."""
    fr = frames(x) * _WIN
    spec = np.fft.rfft(fr, n=N_FFT, axis=1)
    P = spec.real ** 2 + spec.imag ** 2
    return np.log(P @ _W.T + LOG_FLOOR).astype(dtype)


def logmel_fast(x: np.ndarray) -> np.ndarray:
    """float32 version for the training cache (same definition, ~1e-4 agreement)."""
    x = np.asarray(x, dtype=np.float32)
    S = num_steps(x.size)
    F = S * FRAMES_PER_STEP
    total = HOP * (F - 1) + N_FFT
    padded = np.zeros(total, dtype=np.float32)
    m = min(x.size, total - 128)
    padded[128:128 + m] = x[:m]
    fr = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][:F]
    spec = np.fft.rfft(fr * _WIN.astype(np.float32), axis=1)
    P = (spec.real ** 2 + spec.imag ** 2).astype(np.float32)
    return np.log(P @ _W.T.astype(np.float32) + np.float32(LOG_FLOOR))


def golden_signal() -> np.ndarray:
    """Deterministic ~0.3 s test signal: chirp + noise, a silent gap, a partial last step."""
    rng = np.random.default_rng(1234)
    n = 4 * STEP + 300  # 4396 samples = 0.275 s -> 5 steps, the last partial
    t = np.arange(n) / SAMPLE_RATE
    f0, f1 = 100.0, 6000.0
    T = n / SAMPLE_RATE
    phase = 2 * math.pi * (f0 * t + (f1 - f0) * t * t / (2 * T))
    x = 0.5 * np.sin(phase) + 0.05 * rng.standard_normal(n)
    x[1500:2300] = 0.0  # silent gap (spans a frame boundary)
    x[3800:] *= 0.01  # quiet tail
    return np.clip(x, -1.0, 1.0).astype(np.float32)


def write_golden(path: str) -> None:
    x = golden_signal()
    F = logmel(x.astype(np.float64))
    doc = {
        "sample_rate": SAMPLE_RATE,
        "samples": [float(v) for v in x],
        "steps": int(num_steps(x.size)),
        "levels": [round(float(v), 6) for v in step_levels(x.astype(np.float64))],
        "features": [[round(float(v), 6) for v in row] for row in F],
        "note": "samples are float32 values; features/levels computed in float64 per docs/features.md",
    }
    with open(path, "w") as fh:
        json.dump(doc, fh, separators=(",", ":"))
        fh.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--golden", required=True)
    a = ap.parse_args()
    write_golden(a.golden)
    print("wrote", a.golden)


if __name__ == "__main__":
    main()
