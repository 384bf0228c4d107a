"""Labelled voices for the encoder heads: the shared datasets folder (clips.csv) plus two public
repositories listed in ../shared/datasets/README.md, read straight from their git snapshots
(`fetch` puts them under /work/.mirror/<owner>+<name>/repo, or set AURIS_MIRRORS); nothing is
copied into this repository.

  jimbozhang/speechocean762 @ 613968e3   English read by Mandarin speakers; spk2gender, spk2age
                                          (adults >= 18 only: 128 of 250 speakers)
  Natavan-A/AudioMNIST_AZ @ dbb3577e     Azerbaijani spoken digits; metadata.txt gender (59 speakers)
"""
from __future__ import annotations

import csv
import io
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from training.data.clips import DATASETS, decode

MIRRORS = Path(os.environ.get("AURIS_MIRRORS", "/work/.mirror"))
REPOS = {
    "speechocean": ("jimbozhang+speechocean762", "613968e3"),
    "audiomnist_az": ("Natavan-A+AudioMNIST_AZ", "dbb3577e"),
}
# as stated by each repository (../shared/datasets/README.md): what the model cards copy
LICENCES = {
    "speechocean": "README: free for commercial and non-commercial use (no LICENSE file)",
    "audiomnist_az": "none stated",
}
SR = 16000


@dataclass(frozen=True)
class Voice:
    """One labelled clip: where its audio is, whose voice it is."""
    source: str
    speaker: str
    gender: str
    ref: str  # clips.csv path, or "<repo>:<path>" in a mirror
    emotion: str = ""


def _git(repo: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(MIRRORS / repo / "repo"), *args], check=True, capture_output=True).stdout


def _commit(name: str) -> str:
    repo, commit = REPOS[name]
    full = _git(repo, "rev-parse", "HEAD").decode().strip()
    if not full.startswith(commit):
        raise SystemExit(f"{repo} is at {full[:8]}, the recipe names {commit}: fetch that snapshot")
    return full


def shared_voices() -> list[Voice]:
    """Adult labelled speech of clips.csv (BAVED speakers under 18 left out)."""
    out = []
    with open(os.path.join(DATASETS, "clips.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] != "speech" or r["gender"] not in ("male", "female"):
                continue
            if r["age"] and float(r["age"]) < 18:
                continue
            out.append(Voice(r["source"], r["speaker"], r["gender"], r["path"], r["emotion"]))
    return out


def speechocean_voices() -> list[Voice]:
    repo = REPOS["speechocean"][0]
    _commit("speechocean")
    gender, age = {}, {}
    for part in ("train", "test"):
        for line in _git(repo, "show", f"HEAD:{part}/spk2gender").decode().split("\n"):
            if line.strip():
                k, v = line.split()
                gender[k] = "male" if v == "m" else "female"
        for line in _git(repo, "show", f"HEAD:{part}/spk2age").decode().split("\n"):
            if line.strip():
                k, v = line.split()
                age[k] = int(v)
    files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD", "WAVE").decode().split()
    out = []
    for p in files:
        spk = p.split("/")[1].replace("SPEAKER", "")
        if spk in gender and age.get(spk, 0) >= 18:
            out.append(Voice("speechocean", f"speechocean_{spk}", gender[spk], f"{repo}:{p}"))
    return out


def audiomnist_az_voices() -> list[Voice]:
    repo = REPOS["audiomnist_az"][0]
    _commit("audiomnist_az")
    meta = list(csv.DictReader(io.StringIO(_git(repo, "show", "HEAD:metadata.txt").decode())))
    gender = {int(r["SPK ID"]): "male" if r["Gender"].strip().upper() == "M" else "female" for r in meta}
    files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD", "data").decode().split()
    out = []
    for p in files:
        if not p.endswith(".wav"):
            continue
        spk = int(p.split("/")[1])
        if spk in gender:
            out.append(Voice("audiomnist_az", f"az_{spk:02d}", gender[spk], f"{repo}:{p}"))
    return out


def all_voices() -> list[Voice]:
    return shared_voices() + speechocean_voices() + audiomnist_az_voices()


def load(v: Voice) -> np.ndarray:
    """16 kHz mono float32 samples of a voice clip."""
    if ":" not in v.ref:
        return decode(v.ref)
    repo, path = v.ref.split(":", 1)
    x, sr = sf.read(io.BytesIO(_git(repo, "show", f"HEAD:{path}")), dtype="float32", always_2d=True)
    x = x.mean(axis=1)
    if sr != SR:
        from scipy import signal
        x = signal.resample_poly(x, SR, sr).astype(np.float32)
    return x


def sample(voices: list[Voice], per_speaker: dict[str, int], default: int, seed: int = 0) -> list[Voice]:
    """At most N clips per speaker (N per source, else `default`), drawn reproducibly."""
    rng = np.random.default_rng(seed)
    by: dict[str, list[Voice]] = {}
    for v in voices:
        by.setdefault(v.speaker, []).append(v)
    out = []
    for spk in sorted(by):
        vs = sorted(by[spk], key=lambda v: v.ref)
        n = per_speaker.get(vs[0].source, default)
        idx = rng.permutation(len(vs))[:n]
        out += [vs[i] for i in sorted(idx)]
    return out
