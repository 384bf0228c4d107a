"""Waveform-domain augmentation and long-form example synthesis.

An example is L steps (L*1024 samples) of audio built from 1..n clips of
(possibly) different classes separated by short silences, with per-step labels
(-1 = no label) and per-step loss weights (0 for silent steps).
"""
from __future__ import annotations

import io

import numpy as np
import soundfile as sf
from scipy import signal

from training.data import clips as D
from training.data import speakers as S
from training.features import STEP, logmel_fast

SR = 16000
SILENCE_DBFS = -50.0

_SOS_TEL = signal.butter(6, [300, 3400], btype="bandpass", fs=SR, output="sos")


def db2amp(db):
    return 10.0 ** (db / 20.0)


def rms_db(x):
    return 10 * np.log10(np.mean(x.astype(np.float64) ** 2) + 1e-12)


def active_db(x):
    """Level of the louder steps (ignores silences at clip edges)."""
    n = max(1, x.size // STEP)
    lv = np.array([rms_db(x[i * STEP:(i + 1) * STEP]) for i in range(n)])
    return float(np.percentile(lv, 80))


def reverb(x, rng):
    rt60 = rng.uniform(0.15, 0.9)
    n = int(SR * min(rt60, 0.8))
    t = np.arange(n) / SR
    ir = rng.standard_normal(n) * np.exp(-6.9 * t / rt60)
    ir[0] = 0.0
    ir /= np.sqrt(np.sum(ir ** 2)) + 1e-9
    wet = signal.fftconvolve(x, ir)[: x.size]
    mix = rng.uniform(0.2, 0.8)
    return ((1 - mix) * x + mix * wet * (rms_db(x) > -100)).astype(np.float32)


def bandlimit(x, rng):
    r = rng.random()
    if r < 0.45:  # telephone: band-pass 300-3400 and 8 kHz
        y = signal.sosfilt(_SOS_TEL, x)
        y = signal.resample_poly(signal.resample_poly(y, 1, 2), 2, 1)
    elif r < 0.8:  # 8 kHz round trip (like fsdd's originals)
        y = signal.resample_poly(signal.resample_poly(x, 1, 2), 2, 1)
    else:  # 11.025 kHz round trip
        y = signal.resample_poly(signal.resample_poly(x, 441, 640), 640, 441)
    return y[: x.size].astype(np.float32)


def resample_roundtrip(x, rng):
    """16 kHz -> 22.05 or 44.1 kHz -> 16 kHz: files arrive at those rates, and a resampler's passband edge differs."""
    up, down = (441, 320) if rng.random() < 0.5 else (441, 160)
    y = signal.resample_poly(signal.resample_poly(x, up, down), down, up)
    return y[: x.size].astype(np.float32)


def mp3_roundtrip(x, rng):
    """Encode to MP3 and decode (libsndfile/LAME; 16 kHz MPEG-2 layer III, about 20-40 kbit/s: harsher than most
    real MP3s, which are resampled to 16 kHz after a 44.1 kHz decode).  libsndfile removes the codec delay."""
    b = io.BytesIO()
    sf.write(b, x, SR, format="MP3", compression_level=float(rng.uniform(0.1, 0.95)))
    b.seek(0)
    y, _ = sf.read(b, dtype="float32")
    out = np.zeros_like(x)
    out[: min(x.size, y.size)] = y[: x.size]
    return out


def file_roundtrips(wav, rng):
    """How a file reached us, after its level is set: resampled from another rate, MP3-coded."""
    if rng.random() < 0.15:
        wav = np.clip(resample_roundtrip(wav, rng), -1, 1)
    if rng.random() < 0.25:
        wav = mp3_roundtrip(wav, rng)
    return wav


def crop(x, n, rng):
    if x.size <= n:
        return x
    s = rng.integers(0, x.size - n + 1)
    return x[s:s + n]


def _task_split(task: str, c) -> str:
    """A clip's split; emotions' are the speaker recipe's held-out speakers (emotions 1.1.0, its validation clips)."""
    return S.split(c) if task == "emotions" else D.task_split(task, c)


def _task_label(task: str, c) -> str | None:
    """A clip's label; only emotions' causal head (recipes/causal.py) synthesises emotions sequences."""
    return S.label("emotions", c) if task == "emotions" else D.task_label(task, c)


class Pools:
    """Clips of one split grouped for sampling."""

    def __init__(self, clips, split):
        self.clips = [c for c in clips if c.split == split]
        self.music = [c for c in self.clips if c.kind == "music"]
        self.other = [c for c in self.clips if c.kind == "other"]
        self.by = {}
        for task in ("speech", "gender", "arousal", "emotions"):
            t = {}
            for c in clips:
                if _task_split(task, c) != split:
                    continue
                lab = _task_label(task, c)
                if lab is None:
                    continue
                key = (lab, c.source) if task == "speech" else (lab, c.source, c.speaker)
                t.setdefault(key, []).append(c)
            self.by[task] = t


SPEECH_SOURCE_W = {"voxlingua": 3.0, "ravdess": 1.5, "baved": 1.5, "ktuberling": 1.2, "klettres": 1.2,
                   "fsdd": 1.0, "librosa": 0.3, "urdu": 1.5}


VARIANT_P = 0.35
# gender: share of draws taken from the speaker's high-arousal clips (where it has any; the recipe's gender_high_p)
GENDER_HIGH_AROUSAL_P = 0.4
# tasks trained with MP3 and 22.05/44.1 kHz round trips.  speech 1.1.0: step UAR on the validation files coded as
# MP3 (24 kbit/s) 0.895 -> 0.904, clean 0.907 -> 0.905.  gender/arousal with them were worse on clean validation
# (0.924 vs 0.953; UAR 0.546 vs 0.577) and the shipped ones lose little on MP3 (gender 0.953 -> 0.949), so not kept.
CODEC_TASKS = {"speech"}


class Synth:
    def __init__(self, pools: Pools, store: D.AudioStore, task: str, steps: int = 64, variants=None,
                 high_p: float = GENDER_HIGH_AROUSAL_P):
        self.p, self.st, self.task, self.L = pools, store, task, steps
        self.high_p = high_p  # gender: share of draws from the speaker's high-arousal clips
        self.variants = variants or {}  # clip idx -> pitch-shifted int16 versions (see voice_variants.py)
        self.classes = {"speech": D.SPEECH_CLASSES, "gender": D.GENDER_CLASSES, "arousal": D.AROUSAL_CLASSES, "emotions": S.EMOTION_CLASSES}[task]
        self.keys = list(pools.by[task].keys())

    # ---- clip choice
    def pick(self, rng):
        t = self.task
        if t == "speech":
            lab = rng.choice(["speech", "music", "other"], p=[0.45, 0.3, 0.25])
            keys = [k for k in self.keys if k[0] == lab]
            w = np.array([SPEECH_SOURCE_W.get(k[1], 1.0) if lab == "speech" else np.sqrt(len(self.p.by[t][k])) for k in keys])
            k = keys[rng.choice(len(keys), p=w / w.sum())]
        else:
            lab = self.classes[rng.integers(len(self.classes))]
            keys = [k for k in self.keys if k[0] == lab]
            sources = sorted(set(k[1] for k in keys))
            src = sources[rng.integers(len(sources))]  # balance sources, then speakers
            keys = [k for k in keys if k[1] == src]
            if t == "arousal":
                # clip-uniform within (class, source): most BAVED speakers recorded a single level, so
                # speaker-uniform sampling would over-weight speaker identity; speakers with all levels dominate
                cl = [c for k in keys for c in self.p.by[t][k]]
                return lab, cl[rng.integers(len(cl))]
            k = keys[rng.integers(len(keys))]
        cl = self.p.by[t][k]
        if t == "gender" and rng.random() < self.high_p:
            # oversample high-arousal (angry/shouted, happy) speech: raised pitch and effort must not read as female
            hi = [c for c in cl if c.arousal == "high"]
            if hi:
                cl = hi
        return lab, cl[rng.integers(len(cl))]

    def audio(self, c, rng):
        """A clip's samples, or one of its pitch-shifted variants (VARIANT_P of the time when it has some)."""
        vs = self.variants.get(c.idx)
        if vs and rng.random() < VARIANT_P:
            return vs[rng.integers(len(vs))].astype(np.float32) / 32768.0
        return self.st.get(c)

    def background(self, n, rng, kind=None):
        pool = self.p.music if (kind == "music" or (kind is None and rng.random() < 0.5)) else self.p.other
        c = pool[rng.integers(len(pool))]
        b = crop(self.st.get(c), n, rng)
        if b.size < n:
            b = np.tile(b, int(np.ceil(n / max(1, b.size))))[:n]
        return b

    def mix(self, x, b, snr_db):
        px, pb = active_db(x), active_db(b)
        if pb < -90:
            return x
        return x + b * db2amp(px - pb - snr_db)

    # ---- one example
    def example(self, rng):
        N = self.L * STEP
        wav = np.zeros(N, dtype=np.float32)
        owner = np.full(N, -1, dtype=np.int8)
        pos = 0
        if rng.random() < 0.3:
            pos = int(rng.uniform(0, 1.0) * SR)
        while pos < N - SR // 4:
            lab, c = self.pick(rng)
            x = self.audio(c, rng)
            if self.task == "speech" and lab != "speech":
                seg = int(rng.uniform(1.0, 5.0) * SR)
            elif self.task == "speech":
                seg = int(rng.uniform(1.0, 8.0) * SR)
            else:
                seg = N  # whole utterances for gender/arousal
            x = crop(x, min(seg, N - pos), rng).copy()
            if active_db(x) < -80:
                continue
            x *= db2amp(-20.0 - active_db(x) + rng.uniform(-8, 4))
            # per-segment mixing
            r = rng.random()
            clean, mixed_with = x, None
            if lab == "speech" or self.task != "speech":
                if r < (0.55 if self.task == "speech" else 0.35):
                    lo, hi = (0, 20) if self.task == "speech" else (5, 25)
                    mixed_with = "music" if rng.random() < 0.5 else "other"
                    x = self.mix(x, self.background(x.size, rng, mixed_with), rng.uniform(lo, hi))
            elif lab == "music" and r < 0.3:
                x = self.mix(x, self.background(x.size, rng, "music"), rng.uniform(0, 10))
            elif lab == "other" and r < 0.3:
                x = self.mix(x, self.background(x.size, rng, "other"), rng.uniform(0, 10))
            n = x.size
            wav[pos:pos + n] += x
            own = np.full(n, self.classes.index(lab), dtype=np.int8)
            if mixed_with is not None or self.task != "speech":
                # speech-absent blocks (clip-edge silences, pauses) under a background are not speech
                ref = active_db(clean)
                for b0 in range(0, n, STEP // 2):
                    if rms_db(clean[b0:b0 + STEP // 2]) < ref - 30:
                        own[b0:b0 + STEP // 2] = -1 if (self.task != "speech" or mixed_with is None) \
                            else self.classes.index(mixed_with)
            owner[pos:pos + n] = own
            pos += n
            if rng.random() < 0.6:
                pos += int(rng.uniform(0.05, 0.6) * SR)
            if self.task != "speech" and rng.random() < 0.3:
                break  # sometimes a single utterance and silence
        # per-step labels: the class owning most samples of the step
        labels = np.full(self.L, -1, dtype=np.int8)
        weights = np.zeros(self.L, dtype=np.float32)
        for s in range(self.L):
            o = owner[s * STEP:(s + 1) * STEP]
            o = o[o >= 0]
            if o.size > STEP // 4:
                labels[s] = np.bincount(o).argmax()
                lv = rms_db(wav[s * STEP:(s + 1) * STEP])
                weights[s] = 1.0 if lv > -50.0 else 0.0  # relative to a -20 dBFS active level
        # whole-example channel/room augmentation, all classes alike
        if rng.random() < 0.2:
            wav = reverb(wav, rng)
        if rng.random() < 0.35:
            wav = bandlimit(wav, rng)
        if rng.random() < 0.2:  # simple spectral tilt / EQ
            b, a = signal.butter(1, rng.uniform(300, 4000), btype=rng.choice(["lowpass", "highpass"]), fs=SR)
            g = rng.uniform(0.3, 0.8)
            wav = ((1 - g) * wav + g * signal.lfilter(b, a, wav)).astype(np.float32)
        gain = rng.uniform(-40.0, 6.0) if rng.random() < 0.8 else rng.uniform(-20, 0)
        wav = wav * db2amp(gain)
        if rng.random() < 0.3:  # noise floor
            wav = wav + rng.standard_normal(N).astype(np.float32) * db2amp(rng.uniform(-90, -60))
        wav = np.clip(wav, -1, 1)
        if self.task in CODEC_TASKS:
            wav = file_roundtrips(wav, rng)
        return wav, labels, weights


def make_batch(args):
    """Worker: generate `n` examples with seed; returns features f16 [n,4L,64], labels, weights."""
    synth, n, seed = args
    rng = np.random.default_rng(seed)
    X = np.empty((n, synth.L * 4, 64), dtype=np.float16)
    Y = np.empty((n, synth.L), dtype=np.int8)
    W = np.empty((n, synth.L), dtype=np.float16)
    for i in range(n):
        wav, y, w = synth.example(rng)
        X[i] = logmel_fast(wav)
        Y[i], W[i] = y, w
    return X, Y, W


def frequency_mask(x, rng, p: float = 0.5) -> None:
    """With probability p, 1-7 adjacent mel bands of a feature batch [B, T, 64] (a tensor) set to its mean, in place."""
    if rng.random() < p:
        f0 = int(rng.integers(0, 56))
        x[:, :, f0:f0 + int(rng.integers(1, 8))] = x.mean()


LOG_FLOOR = float(np.log(1e-8))  # the front end's floor (features/logmel.py)


def band_edge_drop(x, rng, p: float) -> None:
    """Each example of a feature batch [B, T, 64] (a tensor), with probability p, loses what a telephone handset
    removes: the bands below a cut at about 170-400 Hz and above one at about 3.1-3.7 kHz are attenuated by
    30-60 dB (floored like the front end), in place.  The real codec versions of the bank have one band edge
    each; this shows the model many edges on every recording, so no band outside 300-3400 Hz can carry a class."""
    for b in range(x.shape[0]):
        if rng.random() < p:
            lo, hi = int(rng.integers(3, 11)), int(rng.integers(42, 48))
            att = float(rng.uniform(30, 60)) * np.log(10.0) / 10.0
            for sl in (slice(0, lo), slice(hi, x.shape[2])):
                x[b, :, sl] = (x[b, :, sl] - att).clamp(min=LOG_FLOOR)

