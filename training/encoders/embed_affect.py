"""Embeds the emotional corpora for arousal 2.x and emotions 2.x (heads on encoder views): every
sampled clip clean, through a telephone channel (training/data/channels.py), and as a short crop
(0.5-1.2 s of its voice, the short-utterance slice), cut into the service's encoder windows
(windows.py); each voiced window through the speaker encoder's shipped graph and the Whisper
tiny.en encoder (whisper.py; the mean of every layer's states, so the heads can choose), beside
the per-step probabilities of the shipped arousal and emotions networks. `--views campplus` adds CAM++'s
embeddings (`emb_campplus`; `--views campplus` alone leaves Whisper out: ~17 min for the shared corpora), `--views
campplus_int8` gender's int8 view (`emb_campplus_int8`, the 4.2 kHz cut).

  python -m training.encoders.embed_affect        # ~15 min on 2 cores: training/runs/encoders/affect.pkl
"""
from __future__ import annotations

import argparse
import os
import pickle
from multiprocessing import Pool
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.data import clips as D
from training.data import speakers as S
from training.encoders import windows
from training.encoders.embed import session

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "training/runs/encoders/affect.pkl"
# clips per (speaker, corpus emotion label): corpora with few speakers give more of each
PER_SPEAKER_LABEL = {"nemo": 24, "ettsdb": 5, "urdu": 4, "ravdess": 6, "baved": 6, "ased": 4}
SHORT_S = (0.5, 1.2)
CAMPPLUS_VIEWS = ("campplus", "campplus_int8")  # models/encoders/<name>: the speaker map's float graph, gender's int8 view


def sample(seed: int = 0) -> list[D.Clip]:
    rng = np.random.default_rng(seed)
    by: dict = {}
    for c in D.load_clips():
        if c.kind != "speech" or c.source not in PER_SPEAKER_LABEL or not c.emotion:
            continue
        if S.label("arousal", c) is None and S.label("emotions", c) is None:
            continue
        by.setdefault((c.source, c.speaker, c.emotion), []).append(c)
    out = []
    for key in sorted(by):
        cs = sorted(by[key], key=lambda c: c.path)
        out += [cs[i] for i in sorted(rng.permutation(len(cs))[:PER_SPEAKER_LABEL[key[0]]])]
    return out


# RakshakTeam/emospeech-dataset-v1 (../shared/datasets/README.md; CC BY-NC-SA 4.0): command words in Indian English /
# Hindi recorded in real places, 3 s files, emotion in the file name; the identified users only (one hash stands for
# every unknown user). Calm is everyday delivery: neutral for both tasks; fear is high arousal and no emotions class.
EMOSPEECH = ("RakshakTeam+emospeech-dataset-v1", "85b1ef55")
EMOSPEECH_UNKNOWN_USER = "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f"
EMOSPEECH_KEYWORDS = {"help", "bacho", "stop", "no", "go", "yes"}
EMOSPEECH_LABELS = {"angry": ("high", "irritated"), "happy": ("high", "happy"), "fearful": ("high", None), "calm": ("neutral", "neutral")}
EMOSPEECH_PER_SPEAKER_LABEL = 8


@dataclass(frozen=True)
class MirrorClip:
    """A labelled clip read from a repository snapshot (corpora.load reads "<repo>:<path>")."""
    source: str
    speaker: str
    gender: str
    path: str
    emotion: str
    arousal: str | None
    emotions: str | None


def emospeech(seed: int = 0, per_speaker_label: int = EMOSPEECH_PER_SPEAKER_LABEL) -> list[MirrorClip]:
    from training.encoders import corpora
    repo = EMOSPEECH[0]
    files = corpora._git(repo, "ls-tree", "-r", "--name-only", "HEAD").decode().split("\n")
    by: dict = {}
    for f in files:
        if not f.endswith(".wav"):
            continue
        parts = f.rsplit("/", 1)[-1][:-4].split("-")
        if len(parts) < 5 or parts[0] not in EMOSPEECH_KEYWORDS or parts[2] not in EMOSPEECH_LABELS or parts[-1] == EMOSPEECH_UNKNOWN_USER:
            continue
        by.setdefault((parts[-1][:12], parts[2]), []).append(f)
    rng = np.random.default_rng(seed)
    out = []
    for (spk, emo), fs in sorted(by.items()):
        fs = sorted(fs)
        for i in sorted(rng.permutation(len(fs))[:per_speaker_label]):
            a, e = EMOSPEECH_LABELS[emo]
            out.append(MirrorClip("emospeech", f"emospeech_{spk}", "", f"{repo}:{fs[i]}", emo, a, e))
    return out


def load_clip(c) -> np.ndarray:
    if isinstance(c, MirrorClip):
        from training.encoders import corpora
        return corpora.load(corpora.Voice(c.source, c.speaker, c.gender, c.path, c.emotion))
    return D.decode(c.path)


def labels_of(c) -> tuple:
    if isinstance(c, MirrorClip):
        return c.arousal, c.emotions
    return S.label("arousal", c), S.label("emotions", c)


def short_crop(x: np.ndarray, levels: np.ndarray, rng) -> np.ndarray:
    """0.5-1.2 s starting at a voiced step (the clip's loudest half), after 0-1.6 s of silence (so the word
    falls anywhere on the service's window grid, as in a live stream) and before 0.2 s."""
    n = int(rng.uniform(*SHORT_S) * 16000)
    voiced = np.flatnonzero(levels >= np.percentile(levels, 50))
    start = int(rng.choice(voiced)) * windows.STEP if voiced.size else 0
    start = max(0, min(start - n // 4, x.size - n))
    seg = x[start:start + n]
    lead = np.zeros(int(rng.integers(0, windows.WINDOW_STEPS * windows.STEP)), np.float32)
    return np.concatenate([lead, seg, np.zeros(3200, np.float32)]).astype(np.float32)


def _whisper_layers(model, pcm: np.ndarray) -> np.ndarray:
    """[n, 25600] -> [n, 5, 384]: mean over the window of the states after conv and after each block (the last normed)."""
    import torch
    from torch import nn
    out = []
    with torch.no_grad():
        for i in range(0, len(pcm), 16):
            mel = model.log_mel(torch.from_numpy(pcm[i:i + 16]))
            x = nn.functional.gelu(model.conv2(nn.functional.gelu(model.conv1(mel)))).transpose(1, 2)
            x = x + model.pos[: x.shape[1]]
            means = [x.mean(1)]
            for j, b in enumerate(model.blocks):
                x = b(x)
                means.append((model.ln(x) if j == len(model.blocks) - 1 else x).mean(1))
            out.append(torch.stack(means, 1).numpy())
    return np.concatenate(out) if out else np.zeros((0, 5, 384), np.float32)


def campplus_embeddings(sess, pcm: np.ndarray) -> np.ndarray:
    """[n, 25600] -> [n, 192] CAM++ embeddings (its graph takes at most 4 windows per call)."""
    if len(pcm) == 0:
        return np.zeros((0, 192), np.float32)
    return np.concatenate([sess.run(None, {"pcm": pcm[i:i + 4]})[0] for i in range(0, len(pcm), 4)]).astype(np.float32)


def _work(args) -> list[dict]:
    part, seed, only, min_voiced, views = args
    import torch
    torch.set_num_threads(1)
    from training.data.channels import phone_all
    from training.encoders import whisper
    from training.features import logmel_fast
    views = set(views.split(","))
    spk = session(str(ROOT / "models/encoders/speaker/encoder.onnx"))
    campp = {name: session(str(ROOT / f"models/encoders/{name}/encoder.onnx")) for name in CAMPPLUS_VIEWS if name in views}
    nets = {t: session(str(ROOT / f"models/{t}/model.onnx")) for t in ("arousal", "emotions")}
    wh = whisper.load() if "whisper" in views else None
    rng = np.random.default_rng(seed)
    clean = [load_clip(c) for c in part]
    phone, codecs = phone_all(clean, seed=seed)
    out = []
    for c, x, y, codec in zip(part, clean, phone, codecs):
        arousal, emotions = labels_of(c)
        lv = windows.step_levels(x)
        versions = (("clean", x), (codec, y), ("short", short_crop(x, lv, rng)))
        for channel, sig in versions:
            if only and channel not in only:
                continue
            levels = windows.step_levels(sig)
            idx, pcm = windows.voiced_windows(sig, levels, min_voiced)
            feats = logmel_fast(sig)[None].astype(np.float32)
            rec = {"source": c.source, "speaker": c.speaker, "gender": c.gender, "ref": c.path, "emotion": c.emotion,
                   "arousal": arousal, "emotions": emotions,
                   "channel": channel, "seconds": sig.size / 16000, "levels": levels.astype(np.float32),
                   "windows": np.array(idx, np.int32),
                   "emb": spk.run(None, {"pcm": pcm})[0].astype(np.float32) if len(idx) else np.zeros((0, 256), np.float32),
                   **({"whisper": _whisper_layers(wh, pcm).astype(np.float16)} if wh is not None else {}),
                   **{f"emb_{name}": campplus_embeddings(sess, pcm) for name, sess in campp.items()}}
            for t, sess in nets.items():
                rec[f"net_{t}"] = sess.run(None, {"features": feats})[0][0].astype(np.float32)
            out.append(rec)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="smoke test: at most this many clips")
    ap.add_argument("--only", default="", help="comma-separated versions to keep (clean, short; telephone ones are named by codec)")
    ap.add_argument("--seed", type=int, default=2000)
    ap.add_argument("--min-voiced", type=int, default=windows.MIN_VOICED_STEPS, help="a window is embedded from this many voiced steps")
    ap.add_argument("--corpora", default="shared", help="shared (clips.csv) and/or emospeech (its git snapshot; affect.py reads it from affect_emospeech.pkl)")
    ap.add_argument("--views", default="speaker,whisper",
                    help="encoders beside the speaker encoder's `emb`: whisper, campplus (emb_campplus) and/or campplus_int8 "
                         "(emb_campplus_int8, gender's view)")
    a = ap.parse_args()
    clips = (sample() if "shared" in a.corpora else []) + (emospeech() if "emospeech" in a.corpora else [])
    if a.limit:
        clips = clips[:: max(1, len(clips) // a.limit)][: a.limit]
    chunks = [clips[i:i + 50] for i in range(0, len(clips), 50)]
    print(f"{len(clips)} clips in {len(chunks)} chunks", flush=True)
    records: list[dict] = []
    with Pool(a.workers) as pool:
        for i, part in enumerate(pool.imap(_work, [(c, a.seed + j, tuple(filter(None, a.only.split(","))), a.min_voiced, a.views) for j, c in enumerate(chunks)])):
            records += part
            if i % 5 == 0:
                print(f"chunk {i + 1}/{len(chunks)}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "wb") as f:
        pickle.dump({"records": records, "min_voiced_steps": a.min_voiced}, f)
    print(f"wrote {a.out}: {len(records)} clip versions, {sum(len(r['windows']) for r in records)} windows")


if __name__ == "__main__":
    main()
