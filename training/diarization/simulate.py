"""Simulated conversations for the speaker map: real voices of ONE corpus per conversation (so language and channel
do not give a speaker away), 2-6 speakers, turns of 0.5-10 s cut from a speaker's concatenated utterances, pauses of
0.2-1.5 s, about 10 % of the turn changes overlapping by 0.2-1 s, each speaker's level a few dB apart.

Conditions: `clean`; `telephone` (the whole conversation through training/data/channels.py's 8 kHz band-pass +
G.711 mu-law or A-law ffmpeg round trip, no packet loss); `noise` (a bed of real environmental / game-ambience
sounds of ../shared/datasets, kind `other`, at 10-20 dB SNR under the speech).

Every conversation is a pure function of (corpus, condition, n speakers, index): its seed is crc32 of that key.
Reference = [(speaker "a".."f", start_s, end_s)] (overlapping turns overlap here too). Mono 16 kHz float32.
The reference marks where each voice really sounds: a turn is split at the pauses of its own audio (before mixing)
of PAUSE_S or more, as references from forced alignments are (the NIST rich-transcription rule bridges pauses under
0.3 s). Before, a whole turn was speech, and 41 % of hyke's (digit strings read with pauses), 20 % of speechocean's
and 6-14 % of the others' reference speech was silence.
"""
from __future__ import annotations

import csv
import os
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from training.data.clips import DATASETS, decode
from training.encoders import corpora

SR = 16000
# where the conversations' caches and reports live (validate.py, service_speech.py)
RUNS = Path(os.environ.get("AURIS_DIARIZATION_RUNS", Path(__file__).resolve().parents[2] / "training/runs/diarization"))
CONDITIONS = ("clean", "telephone", "noise")
# corpora with several utterances per speaker; dev = tuning, test = held out (never tuned on)
DEV = ("ravdess", "nemo", "speechocean")
TEST = ("ased", "ettsdb", "urdu", "hyke")
CORPORA = DEV + TEST
SIZES = {2: 3, 3: 3, 4: 3, 5: 2, 6: 2}  # speakers -> conversations per (corpus, condition)
# the tuning corpora have twice as many (since speakers 1.5.0): with 39 per condition, one or two conversations decided
# between neighbouring thresholds; the first SIZES[n] of each are the conversations of before
DEV_SIZES = {n: 2 * k for n, k in SIZES.items()}
# never read (../shared/datasets/README.md and the developers' guide); none of them is in the chosen corpora,
# the check is a guard against a later edit of CORPORA or of the noise pool
FORBIDDEN_SOURCES = {"emodb", "emo-db", "asterisk", "fretsonfire", "openclonk", "lincity", "turev", "turev-db"}
NOISE_SOURCES = ("esc10", "0ad-sfx", "megaglest-sfx", "widelands-sfx")
TARGET_DB = -26.0
PAUSE_S = 0.3


@dataclass(frozen=True)
class Conversation:
    corpus: str
    condition: str
    n: int
    index: int

    @property
    def key(self) -> str:
        return f"{self.corpus}-{self.condition}-{self.n}spk-{self.index}"

    @property
    def seed(self) -> int:
        return zlib.crc32(self.key.encode())


def plan(corpora_=CORPORA, conditions=CONDITIONS) -> list[Conversation]:
    return [Conversation(c, cond, n, i) for c in corpora_ for cond in conditions
            for n, k in (DEV_SIZES if c in DEV else SIZES).items() for i in range(k)]


# ------------------------------------------------------------------ voices and noise
@lru_cache(maxsize=1)
def voices() -> dict[str, dict[str, list[str]]]:
    """corpus -> speaker -> refs (clips.csv paths or mirror refs), adults only, speakers with >= 3 clips."""
    out: dict[str, dict[str, list[str]]] = {}
    with open(os.path.join(DATASETS, "clips.csv"), newline="") as f:
        for r in csv.DictReader(f):
            src = r["source"]
            if r["kind"] != "speech" or not r["speaker"] or src not in CORPORA:
                continue
            assert src.lower() not in FORBIDDEN_SOURCES
            if r["age"] and float(r["age"]) < 18:
                continue
            out.setdefault(src, {}).setdefault(r["speaker"], []).append(r["path"])
    if "speechocean" in CORPORA:
        for v in corpora.speechocean_voices():
            out.setdefault("speechocean", {}).setdefault(v.speaker, []).append(v.ref)
    for src in out:
        out[src] = {s: sorted(r) for s, r in sorted(out[src].items()) if len(r) >= 3}
    return out


@lru_cache(maxsize=1)
def noise_refs() -> list[str]:
    refs = []
    with open(os.path.join(DATASETS, "clips.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] != "other" or r["source"] not in NOISE_SOURCES:
                continue
            if r["source"] == "esc10" and os.path.basename(r["path"]).startswith("5-"):
                continue  # ESC-50 fold 5 is reserved (the shared copy has folds 1-4 only)
            refs.append(r["path"])
    return sorted(refs)


def _frame_db(x: np.ndarray, f: int = 160) -> np.ndarray:
    n = x.size // f
    return 10 * np.log10((x[: n * f].reshape(n, f).astype(np.float64) ** 2).mean(1) + 1e-12)


def speaking_spans(x: np.ndarray, pause_s: float = PAUSE_S) -> list[tuple[float, float]]:
    """Where a turn's own audio sounds, in seconds from its start: 10 ms frames within 35 dB of its loudest and above
    -55 dBFS (trim()'s rule, with its 20 / 30 ms margins), pauses shorter than `pause_s` bridged."""
    f = 160
    e = _frame_db(x, f)
    on = np.nonzero((e >= e.max() - 35) & (e >= -55))[0] if e.size else np.zeros(0, int)
    spans: list[list[int]] = []
    for i in on:
        if spans and (i - spans[-1][1]) * f / SR < pause_s:
            spans[-1][1] = int(i)
        else:
            spans.append([int(i), int(i)])
    n = e.size
    return [(max(a - 2, 0) * f / SR, min(b + 3, n) * f / SR) for a, b in spans]


def _load(ref: str) -> np.ndarray:
    if ":" in ref:
        return corpora.load(corpora.Voice("", "", "", ref))
    return decode(ref)


def trim(x: np.ndarray) -> np.ndarray:
    """Leading/trailing silence off: 10 ms frames within 35 dB of the loudest and above -55 dBFS."""
    f = 160
    n = x.size // f
    if n < 3:
        return x
    e = _frame_db(x, f)
    on = np.nonzero((e >= e.max() - 35) & (e >= -55))[0]
    if on.size == 0:
        return x[:0]
    return x[max(on[0] - 2, 0) * f: min(on[-1] + 3, n) * f]


_CLIPS: dict[str, np.ndarray] = {}


def clip(ref: str) -> np.ndarray:
    """Trimmed clip, its active level set to TARGET_DB (cached in the process)."""
    if ref not in _CLIPS:
        if len(_CLIPS) > 3000:
            _CLIPS.clear()
        x = trim(_load(ref).astype(np.float32))
        if x.size:
            x = x * 10 ** ((TARGET_DB - active_db(x)) / 20)
        _CLIPS[ref] = x.astype(np.float32)
    return _CLIPS[ref]


def active_db(x: np.ndarray) -> float:
    """Mean power of the louder half of the 64 ms steps (the speech in a trimmed clip), dBFS."""
    n = max(1, x.size // 1024)
    p = np.array([np.mean(x[i * 1024:(i + 1) * 1024].astype(np.float64) ** 2) for i in range(n)]) + 1e-12
    p = np.sort(p)[n // 2:]
    return float(10 * np.log10(p.mean()))


def fade(x: np.ndarray, n: int = 160) -> np.ndarray:
    x = x.copy()
    k = min(n, x.size // 2)
    if k:
        r = np.linspace(0, 1, k, dtype=np.float32)
        x[:k] *= r
        x[-k:] *= r[::-1]
    return x


# ------------------------------------------------------------------ one conversation
def _turn_audio(refs: list[str], length_s: float, rng) -> np.ndarray:
    """length_s of one speaker: their utterances, shuffled and concatenated, from a random offset."""
    need = int(length_s * SR)
    order = rng.permutation(len(refs))
    parts, have = [], 0
    first = True
    for _ in range(8):
        for i in order:
            x = clip(refs[i])
            if x.size < SR // 4:
                continue
            if first:
                x = x[rng.integers(0, max(1, x.size - SR // 2)):]
                first = False
            parts.append(x)
            have += x.size
            if have >= need:
                break
        if have >= need:
            break
    y = np.concatenate(parts)[:need] if parts else np.zeros(need, np.float32)
    return fade(y)


def simulate(conv: Conversation) -> tuple[np.ndarray, list[tuple[str, float, float]], dict]:
    """(samples, reference turns, meta) of one conversation (see the module doc)."""
    rng = np.random.default_rng(conv.seed)
    pool = voices()[conv.corpus]
    names = sorted(pool)
    chosen = [names[i] for i in rng.choice(len(names), conv.n, replace=False)]
    labels = "abcdefghij"[: conv.n]
    w = rng.dirichlet(np.full(conv.n, 2.0))
    w = np.maximum(w, 0.5 / conv.n)
    w /= w.sum()
    gains = rng.uniform(-3, 3, conv.n)  # dB per speaker
    dur = rng.uniform(25 + 10 * conv.n, 45 + 10 * conv.n)
    seq, lengths = [], []
    count = np.zeros(conv.n, int)
    total, prev = 0.0, -1
    while (total < dur or count.min() < 2) and total < 3 * dur:
        p = w.copy()
        if prev >= 0:
            p[prev] = 0
        if total >= dur and (p * (count < 2)).sum() > 0:  # only the speakers still short of two turns
            p = p * (count < 2)
        p /= p.sum()
        k = int(rng.choice(conv.n, p=p))
        L = float(np.exp(rng.uniform(np.log(0.5), np.log(10.0))))
        seq.append(k)
        lengths.append(L)
        count[k] += 1
        total += L
        prev = k
    # place the turns
    t = 0.5
    turns, audio = [], []
    overlaps = 0
    for i, (k, L) in enumerate(zip(seq, lengths)):
        if i > 0:
            if rng.random() < 0.1:
                ov = min(rng.uniform(0.2, 1.0), 0.5 * lengths[i - 1], 0.5 * L)
                t -= ov
                overlaps += 1
            else:
                t += rng.uniform(0.2, 1.5)
        x = _turn_audio(pool[chosen[k]], L, rng) * 10 ** ((gains[k] + rng.uniform(-1, 1)) / 20)
        s = int(round(t * SR))
        audio.append((s, x))
        turns += [(labels[k], s / SR + a, s / SR + b) for a, b in speaking_spans(x)]
        t = (s + x.size) / SR
    n = int((t + 0.5) * SR)
    y = np.zeros(n, np.float32)
    for s, x in audio:
        y[s:s + x.size] += x
    meta = {"corpus": conv.corpus, "condition": conv.condition, "speakers": conv.n, "index": conv.index,
            "key": conv.key, "seed": conv.seed, "voices": dict(zip(labels, chosen)), "overlaps": overlaps,
            "turn_changes": len(seq) - 1}
    if conv.condition == "telephone":
        from training.data.channels import phone_batch
        codec = ["mulaw", "alaw"][int(rng.integers(2))]
        y = phone_batch([y], codec, rng, loss=0.0)[0]
        meta["codec"] = codec
    elif conv.condition == "noise":
        snr = float(rng.uniform(10, 20))
        y = y + noise_bed(n, rng, speech_db(y, turns) - snr)
        meta["snr_db"] = round(snr, 2)
    peak = float(np.abs(y).max())
    if peak > 0.99:
        y = y * (0.99 / peak)
    return y.astype(np.float32), turns, meta


def speech_db(y: np.ndarray, turns) -> float:
    m = np.zeros(y.size, bool)
    for _, s, e in turns:
        m[int(s * SR):int(e * SR)] = True
    return float(10 * np.log10(np.mean(y[m].astype(np.float64) ** 2) + 1e-12))


def noise_bed(n: int, rng, level_db: float) -> np.ndarray:
    """Real non-speech clips end to end (each at its own level, +-6 dB), scaled to level_db mean power."""
    refs = noise_refs()
    parts, have = [], 0
    while have < n:
        x = decode(refs[int(rng.integers(len(refs)))]).astype(np.float32)
        x = trim(x)
        if x.size < SR // 2:
            continue
        lv = 10 * np.log10(np.mean(x.astype(np.float64) ** 2) + 1e-12)
        x = fade(x * 10 ** ((rng.uniform(-6, 6) - lv) / 20), 800)
        parts.append(x)
        have += x.size
    bed = np.concatenate(parts)[:n]
    lv = 10 * np.log10(np.mean(bed.astype(np.float64) ** 2) + 1e-12)
    return (bed * 10 ** ((level_db - lv) / 20)).astype(np.float32)


def speech_steps(turns, num_steps: int, step_s: float = 0.064) -> np.ndarray:
    """Oracle speech per step: reference speech covers at least half of the step."""
    # exact union coverage on a 1 ms grid
    ms = np.zeros(int(np.ceil(num_steps * step_s * 1000)) + 1, bool)
    for _, s, e in turns:
        ms[int(round(s * 1000)):int(round(e * 1000))] = True
    per = int(round(step_s * 1000))
    cov = ms[: num_steps * per].reshape(num_steps, per).mean(1)
    return cov >= 0.5
