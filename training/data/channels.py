"""Telephone channels with real codecs (ffmpeg), for training augmentation and the telephone stress slice.

A channel: 16 kHz -> 8 kHz, a handset band-pass (about 300-3400 Hz), a narrow-band codec round trip through
ffmpeg (G.711 mu-law / A-law, GSM 06.10, Speex narrow-band, Codec2, G.726 ADPCM), optional packet loss
(20 ms frames zeroed), -> 16 kHz.  Many clips go through one ffmpeg call: they are joined with gaps, coded
once and cut apart again, so a channel costs a few milliseconds per clip instead of a process each.
"""
from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np
from scipy import signal

SR = 16000
NB = 8000
GAP = NB // 4  # 250 ms between joined clips: no codec state leaks from one clip into the next one's speech

# name -> (ffmpeg encoder options, container) at 8 kHz mono
CODECS = {
    "mulaw": (["-c:a", "pcm_mulaw"], "wav"),
    "alaw": (["-c:a", "pcm_alaw"], "wav"),
    "gsm": (["-c:a", "libgsm"], "gsm"),
    "speex": (["-c:a", "libspeex", "-b:a", "8000"], "ogg"),
    "codec2": (["-c:a", "libcodec2", "-mode", "3200"], "c2"),
    "g726": (["-c:a", "g726", "-b:a", "24000"], "wav"),
}


def _ffmpeg_roundtrip(x8: np.ndarray, codec: str) -> np.ndarray:
    """Encode 8 kHz float audio with `codec` and decode it again (same length, codec delay removed)."""
    opts, fmt = CODECS[codec]
    pcm = (np.clip(x8, -1, 1) * 32767).astype("<i2").tobytes()
    with tempfile.TemporaryDirectory() as d:
        enc = os.path.join(d, f"c.{fmt}")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "s16le", "-ar", str(NB), "-ac", "1", "-i", "-", *opts, enc],
                       input=pcm, check=True)
        out = subprocess.run(["ffmpeg", "-v", "error", "-i", enc, "-f", "s16le", "-ac", "1", "-ar", str(NB), "-"],
                             check=True, capture_output=True).stdout
    y = np.frombuffer(out, dtype="<i2").astype(np.float32) / 32768.0
    return _align(x8, y)


def _align(ref: np.ndarray, y: np.ndarray, max_lag: int = 800) -> np.ndarray:
    """y shifted to line up with ref (codecs add a delay of up to a few tens of ms), cut/padded to ref's length."""
    n = min(ref.size, y.size, NB * 20)
    if n > 2 * max_lag:
        a, b = ref[:n].astype(np.float64), y[:n].astype(np.float64)
        c = signal.correlate(b, a, mode="full", method="fft")[n - 1: n - 1 + max_lag]
        lag = int(np.argmax(c))
    else:
        lag = 0
    out = np.zeros(ref.size, dtype=np.float32)
    seg = y[lag: lag + ref.size]
    out[: seg.size] = seg
    return out


def _bandpass(lo: float, hi: float):
    return signal.butter(4, [lo, hi], btype="bandpass", fs=NB, output="sos")


def packet_loss(x8: np.ndarray, rate: float, rng) -> np.ndarray:
    """Zero whole 20 ms frames at random (what a jitter buffer without concealment plays)."""
    if rate <= 0:
        return x8
    y = x8.copy()
    fr = NB // 50
    for i in range(0, y.size, fr):
        if rng.random() < rate:
            y[i: i + fr] = 0.0
    return y


def phone_batch(waves: list[np.ndarray], codec: str, rng, loss: float | None = None) -> list[np.ndarray]:
    """Each 16 kHz clip through one telephone channel with `codec`; returns 16 kHz clips of the same lengths."""
    lo, hi = rng.uniform(200, 400), rng.uniform(3200, 3600)
    sos = _bandpass(lo, hi)
    parts, spans, pos = [], [], 0
    for w in waves:
        w8 = signal.resample_poly(w.astype(np.float64), 1, 2)
        parts += [w8, np.zeros(GAP)]
        spans.append((pos, pos + w8.size))
        pos += w8.size + GAP
    joined = signal.sosfilt(sos, np.concatenate(parts)).astype(np.float32)
    coded = _ffmpeg_roundtrip(joined, codec)
    rate = rng.choice([0.0, 0.0, 0.01, 0.03, 0.06]) if loss is None else loss
    out = []
    for (a, b), w in zip(spans, waves):
        seg = packet_loss(coded[a:b], rate, rng)
        y = signal.resample_poly(seg.astype(np.float64), 2, 1)[: w.size]
        if y.size < w.size:
            y = np.pad(y, (0, w.size - y.size))
        out.append(y.astype(np.float32))
    return out


def assign_codecs(n: int, rng) -> list[str]:
    """A codec per clip, every codec about equally often."""
    names = list(CODECS)
    return [names[i] for i in rng.permutation(np.arange(n) % len(names))]


def phone_all(waves: list[np.ndarray], seed: int, group: int = 200, loss: float | None = None) -> tuple[list[np.ndarray], list[str]]:
    """Every clip through a telephone channel, codecs spread evenly; clips of one codec coded in groups."""
    rng = np.random.default_rng(seed)
    codecs = assign_codecs(len(waves), rng)
    out: list[np.ndarray | None] = [None] * len(waves)
    for codec in CODECS:
        idx = [i for i, c in enumerate(codecs) if c == codec]
        for g in range(0, len(idx), group):
            chunk = idx[g: g + group]
            for i, y in zip(chunk, phone_batch([waves[i] for i in chunk], codec, rng, loss)):
                out[i] = y
    return out, codecs  # type: ignore[return-value]
