"""Dataset index, speaker/source-disjoint splits and a decoded-audio cache.

The audio lives in /work/shared/datasets (or $AURIS_DATASETS); nothing from it is
ever copied into the repository.  Decoded audio is cached (int16) under
training/cache/audio/ (gitignored).
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
import subprocess
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # training/
DATASETS = os.environ.get("AURIS_DATASETS", os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "datasets"))
if not os.path.isdir(DATASETS):
    DATASETS = "/work/shared/datasets"
CACHE = os.path.join(HERE, "cache")
SR = 16000

# ---------------------------------------------------------------- splits
# Validation speakers / sources (never used for training any task).
RAVDESS_VAL_ACTORS = {21, 22, 23, 24}                 # 21, 23 male; 22, 24 female
BAVED_VAL_SPEAKERS = {0, 12, 17, 42, 45, 48, 49, 54, 102, 103}  # 12, 42, 54, 102, 103 female adults; 17, 48, 49, 54, 102 have all 3 levels
FSDD_VAL_SPEAKERS = {"fsdd_theo"}
VAL_SOURCES_WHOLE = {"urdu", "widelands-music", "widelands-sfx"}  # cross-corpus hold-outs
JAMENDO_VAL_SONGS = {"Mes_Larmes_-_kobzx2z", "de_bonne_humeur_-_Le_Nez_Tordu"}
ESC10_VAL_FOLDS = {"4"}
# Gender only: URDU is speaker-disjoint instead of wholly held out (acted corpora never show natural, emotional male
# speech).  Fixed rule: odd speaker numbers (SF1, SF3, .., SM1, SM3, ..) train, even numbers validate; both genders
# on both sides (train 6 f / 10 m speakers, val 5 f / 8 m).  Speech and arousal still hold URDU out whole.
def urdu_gender_train(c) -> bool:
    return c.source == "urdu" and int(c.speaker.split("_")[1][2:]) % 2 == 1


def task_split(task: str, c) -> str:
    """Split of a clip for one task (differs from Clip.split only for URDU in the gender task)."""
    if task == "gender" and urdu_gender_train(c):
        return "train"
    return c.split


def _lang_hash_val(lang: str, mod: int = 4) -> bool:
    return int(hashlib.md5(lang.encode()).hexdigest(), 16) % mod == 0


@dataclass
class Clip:
    idx: int
    path: str
    source: str
    kind: str
    speaker: str
    gender: str
    age: str
    emotion: str
    arousal: str
    language: str
    license: str
    raw: str = field(repr=False, default="")

    @property
    def split(self) -> str:
        return split_of(self)


def split_of(c: Clip) -> str:
    s = c.source
    if s in VAL_SOURCES_WHOLE:
        return "val"
    if s == "ravdess":
        return "val" if int(c.speaker.split("_")[1]) in RAVDESS_VAL_ACTORS else "train"
    if s == "baved":
        return "val" if int(c.speaker.split("_")[1]) in BAVED_VAL_SPEAKERS else "train"
    if s == "fsdd":
        return "val" if c.speaker in FSDD_VAL_SPEAKERS else "train"
    if s in ("voxlingua", "klettres", "ktuberling"):
        # language-disjoint (and hence speaker-disjoint for voxlingua's YouTube ids)
        return "val" if _lang_hash_val(c.language) else "train"
    if s == "jamendo":
        return "val" if os.path.basename(c.path).split("@")[0] in JAMENDO_VAL_SONGS else "train"
    if s == "esc10":
        return "val" if os.path.basename(c.path).split("-")[0] in ESC10_VAL_FOLDS else "train"
    return "train"  # game music / sfx except widelands, librosa


def load_clips(datasets: str = DATASETS) -> list[Clip]:
    path = os.path.join(datasets, "clips.csv")
    with open(path, newline="") as fh:
        lines = fh.read().splitlines()
    header = lines[0]
    out = []
    for i, row in enumerate(csv.DictReader(io.StringIO("\n".join(lines)))):
        out.append(Clip(idx=i, raw=lines[i + 1], **{k: row[k] for k in
                        ("path", "source", "kind", "speaker", "gender", "age", "emotion", "arousal", "language", "license")}))
    assert header.startswith("path,source,kind")
    return out


def rows_sha256(clips: list[Clip]) -> str:
    h = hashlib.sha256()
    for c in sorted(clips, key=lambda c: c.idx):
        h.update(c.raw.encode() + b"\n")
    return h.hexdigest()


# ---------------------------------------------------------------- task membership
AROUSAL_CLASSES = ["high", "low", "neutral"]
GENDER_CLASSES = ["female", "male"]
SPEECH_CLASSES = ["music", "other", "speech"]


def is_adult(c: Clip) -> bool:
    return not (c.age and int(c.age) < 18)


def task_label(task: str, c: Clip) -> str | None:
    """Clip-level label for a task, or None when the clip is not used by it."""
    if task == "speech":
        return c.kind
    if task == "gender":
        if c.kind != "speech" or c.gender not in GENDER_CLASSES or not is_adult(c):
            return None
        if c.source == "fsdd":  # all male, 8 kHz: a bandwidth shortcut; left out
            return None
        return c.gender
    if task == "arousal":
        if c.source not in ("ravdess", "baved", "urdu"):
            return None
        return c.arousal if c.arousal in AROUSAL_CLASSES else None  # disgust ('ambiguous') excluded
    raise ValueError(task)


# ---------------------------------------------------------------- audio
def decode(path: str) -> np.ndarray:
    full = os.path.join(DATASETS, path)
    try:
        import soundfile as sf
        x, sr = sf.read(full, dtype="float32", always_2d=True)
        x = x.mean(axis=1)
        assert sr == SR
        return x
    except Exception:
        # some Opus files are rejected by libsndfile ("malformed"); ffmpeg decodes them
        out = subprocess.run(["ffmpeg", "-v", "error", "-i", full, "-f", "f32le", "-ac", "1", "-ar", str(SR), "-"],
                             check=True, capture_output=True).stdout
        return np.frombuffer(out, dtype=np.float32).copy()


def _decode_one(path: str) -> np.ndarray:
    x = decode(path)
    return np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16)


class AudioStore:
    """All decoded clips as one int16 array + offsets (cached on disk)."""

    def __init__(self, clips: list[Clip], workers: int = 2):
        os.makedirs(os.path.join(CACHE, "audio"), exist_ok=True)
        key = rows_sha256(clips)[:16]
        fn = os.path.join(CACHE, "audio", f"audio_{key}.npz")
        if os.path.exists(fn):
            z = np.load(fn)
            self.data, self.offsets = z["data"], z["offsets"]
        else:
            from multiprocessing import Pool
            with Pool(workers) as p:
                arrs = p.map(_decode_one, [c.path for c in clips], chunksize=16)
            self.offsets = np.concatenate([[0], np.cumsum([a.size for a in arrs])]).astype(np.int64)
            self.data = np.concatenate(arrs)
            np.savez(fn, data=self.data, offsets=self.offsets)
        self.pos = {c.idx: i for i, c in enumerate(clips)}

    def get(self, clip: Clip) -> np.ndarray:
        i = self.pos[clip.idx]
        return self.data[self.offsets[i]:self.offsets[i + 1]].astype(np.float32) / 32768.0

    def duration(self, clip: Clip) -> float:
        i = self.pos[clip.idx]
        return (self.offsets[i + 1] - self.offsets[i]) / SR


def write_validation_csvs(clips: list[Clip], outdir: str) -> dict:
    """training/validation/<task>.csv: path,task,label (paths relative to the datasets folder)."""
    os.makedirs(outdir, exist_ok=True)
    counts = {}
    for task in ("speech", "gender", "arousal"):
        rows = [(c.path, task, task_label(task, c)) for c in clips if task_split(task, c) == "val" and task_label(task, c)]
        with open(os.path.join(outdir, f"{task}.csv"), "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["path", "task", "label"])
            w.writerows(rows)
        counts[task] = len(rows)
    return counts


if __name__ == "__main__":
    import collections
    import time
    clips = load_clips()
    for task in ("speech", "gender", "arousal"):
        for sp in ("train", "val"):
            cnt = collections.Counter((c.source, task_label(task, c)) for c in clips if task_split(task, c) == sp and task_label(task, c))
            print(task, sp, sum(cnt.values()), dict(sorted(cnt.items())))
    t = time.time()
    st = AudioStore(clips)
    print("audio", st.data.size / SR / 3600, "h", time.time() - t, "s")
