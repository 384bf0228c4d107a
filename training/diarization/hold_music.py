"""Held-out conversations with hold music: each of conversations/ (embed.py's export, 60 held-out) with two pieces of
music of 4-6 s put into two of its pauses (>= 0.3 s), at the conversation's speech level, 50 ms fades, no gap -
as a call put on hold and taken back. The reference turns move with the inserted audio; the music is no one's
speech. Measures what music does to the speaker map through the service (the file speech gate tried in session 40):

  python -m training diarization hold_music          # -> training/runs/diarization/conversations_music/
  node dist/src/cli/main.js eval --conversations training/runs/diarization/conversations_music

Music: jamendo, Wesnoth 1.16 and 0 A.D. soundtracks of the shared datasets (kind `music`; none of them reserved).
Every conversation's choices are a pure function of its key (crc32 seed).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import zlib
from pathlib import Path

import numpy as np
import soundfile as sf

from training.data.clips import DATASETS, decode

SR = 16000
RUNS = Path(__file__).resolve().parents[2] / "training/runs/diarization"
SOURCES = ("jamendo", "wesnoth-1.16-music", "0ad-music")
PIECES = 2
MIN_PAUSE_S = 0.3
FADE = 800  # samples (50 ms)


def music_rows() -> list[dict]:
    rows = csv.DictReader(open(os.path.join(DATASETS, "clips.csv")))
    return [r for r in rows if r["kind"] == "music" and r["source"] in SOURCES]


def level_db(x: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(x.astype(np.float64) ** 2) + 1e-12))


def pauses(turns: list[dict]) -> list[float]:
    """The middle of every pause of >= MIN_PAUSE_S between consecutive turns (nobody speaking)."""
    ts = sorted(turns, key=lambda t: t["start"])
    out, end = [], ts[0]["end"] if ts else 0.0
    for t in ts[1:]:
        if t["start"] - end >= MIN_PAUSE_S:
            out.append((end + t["start"]) / 2)
        end = max(end, t["end"])
    return out


def with_music(y: np.ndarray, ref: dict, rows: list[dict]) -> tuple[np.ndarray, dict] | None:
    rng = np.random.default_rng(zlib.crc32(ref["key"].encode()))
    gaps = pauses(ref["turns"])
    if len(gaps) < PIECES:
        return None
    at = sorted(float(a) for a in rng.choice(gaps, PIECES, replace=False))
    voiced = y[np.abs(y) > 1e-4]
    speech_db = level_db(voiced) if voiced.size else -26.0
    pieces, inserted, prev = [], [], 0
    for a in at:
        n = int(a * SR)
        pieces.append(y[prev:n])
        m = decode(os.path.join(DATASETS, rows[int(rng.integers(len(rows)))]["path"]))
        length = int(rng.uniform(4, 6) * SR)
        off = int(rng.integers(0, max(1, len(m) - length)))
        m = np.asarray(m[off:off + length], dtype=np.float32)
        m = np.pad(m, (0, length - len(m))) * np.float32(10 ** ((speech_db - level_db(m)) / 20))
        fade = np.linspace(0, 1, FADE, dtype=np.float32)
        m[:FADE] *= fade
        m[-FADE:] *= fade[::-1]
        pieces.append(m)
        inserted.append((a, length / SR))
        prev = n
    pieces.append(y[prev:])

    def moved(t: float) -> float:
        return t + sum(d for a, d in inserted if a <= t)

    out = dict(ref, turns=[dict(t, start=round(moved(t["start"]), 3), end=round(moved(t["end"]), 3)) for t in ref["turns"]])
    out["music"] = [[round(moved(a) - d, 3), round(d, 3)] for a, d in inserted]  # [start_s, seconds] of each piece
    return np.clip(np.concatenate(pieces), -1, 1), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=os.environ.get("AURIS_DIARIZATION_RUNS", str(RUNS)))
    a = ap.parse_args()
    src, dst = Path(a.runs) / "conversations", Path(a.runs) / "conversations_music"
    dst.mkdir(parents=True, exist_ok=True)
    rows = music_rows()
    done = 0
    for js in sorted(src.glob("*spk-*.json")):
        ref = json.load(open(js))
        y, sr = sf.read(js.with_suffix(".wav"), dtype="float32")
        assert sr == SR, f"{js}: {sr} Hz"
        made = with_music(y, ref, rows)
        if made is None:
            continue
        z, out = made
        sf.write(dst / f"{ref['key']}.wav", z, SR, subtype="PCM_16")
        json.dump(out, open(dst / f"{ref['key']}.json", "w"), indent=1)
        done += 1
    print(f"{done} conversations with hold music -> {dst}")


if __name__ == "__main__":
    main()
