"""Labels and splits of the speaker models of version 2 (gender 2.x, arousal 2.x, emotions 1.x).

The speech model keeps its rules in data/clips.py.  Here every corpus with speaker labels takes part, split by
speaker (held-out speakers validate the shipped model), and `corpus` is what leave-one-corpus-out holds out.
"""
from __future__ import annotations

import hashlib
import math

from training.data import clips as D

GENDER_CLASSES = D.GENDER_CLASSES                      # ["female", "male"]
AROUSAL_CLASSES = D.AROUSAL_CLASSES                    # ["high", "low", "neutral"]
EMOTION_CLASSES = ["happy", "irritated", "neutral", "tired"]
CLASSES = {"gender": GENDER_CLASSES, "arousal": AROUSAL_CLASSES, "emotions": EMOTION_CLASSES}
TASKS = tuple(CLASSES)

# Corpora whose speakers carry the labels (fsdd is all male and 8 kHz: a bandwidth shortcut, left out).
CORPORA = ("ravdess", "baved", "urdu", "hyke", "ased", "nemo", "ettsdb")

# Corpus emotion label -> emotions class.  Fear and surprise are left out: neither is one of the four, and
# mapping fear (high arousal, negative) to `irritated` would teach that any tense voice is irritated.
# Disgust joins anger as `irritated` (the commercial model's class covers annoyance and disgust).
# Calm (RAVDESS) is a relaxed neutral delivery: `neutral`, not `tired`.
EMOTION_MAP = {
    "happy": "happy", "happiness": "happy",
    "angry": "irritated", "anger": "irritated", "disgust": "irritated",
    "neutral": "neutral", "calm": "neutral",
    "sad": "tired", "sadness": "tired",
}


def _kept_speakers(items, fraction: float) -> set:
    """A fixed, seed-independent subset: the first ceil(fraction * n) speakers of each (corpus, gender) stratum
    in md5 order, so a smaller fraction's speakers are always among a larger one's."""
    strata: dict = {}
    for c, _ in items:
        strata.setdefault((c.source, c.gender), set()).add(c.speaker)
    kept = set()
    for speakers in strata.values():
        order = sorted(speakers, key=lambda s: hashlib.md5(s.encode()).hexdigest())
        kept.update(order[:max(1, math.ceil(fraction * len(order)))])
    return kept


def training_items(items, left_out_emotions=(), speaker_fraction: float = 1.0):
    """The (clip, class) pairs that training uses: all but the clips of the corpus emotion labels an experiment
    keeps out of training (`left_out_emotions`, e.g. ("calm",); scoring still maps them with EMOTION_MAP) and, for a
    learning-curve point, of the training speakers left out (`speaker_fraction` of every corpus and gender kept)."""
    if not 0.0 < speaker_fraction <= 1.0:
        raise ValueError(f"speaker fraction must be in (0, 1], got {speaker_fraction}")
    fraction = speaker_fraction
    items = [it for it in items if it[0].emotion not in set(left_out_emotions)]
    if fraction < 1.0:
        kept = _kept_speakers(items, fraction)
        items = [it for it in items if it[0].speaker in kept]
    return items


# BAVED's levels 0/1/2 are arousal, not emotion categories: BAVED is not in the emotions task.
EMOTION_CORPORA = ("ravdess", "urdu", "ased", "nemo", "ettsdb")


def label(task: str, c) -> str | None:
    """Clip-level label of a speaker task, or None when the clip does not take part."""
    if c.kind != "speech" or c.source not in CORPORA:
        return None
    if task == "gender":
        return c.gender if c.gender in GENDER_CLASSES and D.is_adult(c) else None
    if task == "arousal":
        return c.arousal if c.arousal in AROUSAL_CLASSES else None  # RAVDESS disgust ('ambiguous') left out
    if task == "emotions":
        return EMOTION_MAP.get(c.emotion) if c.source in EMOTION_CORPORA else None
    raise ValueError(task)


def _hash_val(speaker: str, mod: int = 5) -> bool:
    return int(hashlib.md5(speaker.encode()).hexdigest(), 16) % mod == 0


# nEMO has 9 speakers: one woman and one man validate (a hash could pick none of one gender)
NEMO_VAL_SPEAKERS = {"nemo_KD0", "nemo_SM0"}


def split(c) -> str:
    """`train` or `val` for the shipped model: held-out speakers in every corpus (URDU: even-numbered speakers,
    as for gender 1.1+; RAVDESS actors 21-24 and the BAVED list as before; the new corpora: a fifth of the
    speakers by hash; nEMO: two named speakers)."""
    s = c.source
    if s == "ravdess":
        return "val" if int(c.speaker.split("_")[1]) in D.RAVDESS_VAL_ACTORS else "train"
    if s == "baved":
        return "val" if int(c.speaker.split("_")[1]) in D.BAVED_VAL_SPEAKERS else "train"
    if s == "urdu":
        return "train" if D.urdu_gender_train(c) else "val"
    if s == "nemo":
        return "val" if c.speaker in NEMO_VAL_SPEAKERS else "train"
    return "val" if _hash_val(c.speaker) else "train"


def clips_of(task: str, clips, corpora=None, split_name: str | None = None):
    """(clip, class index) of a task, optionally only some corpora and one split."""
    cls = CLASSES[task]
    out = []
    for c in clips:
        lab = label(task, c)
        if lab is None or (corpora is not None and c.source not in corpora):
            continue
        if split_name is not None and split(c) != split_name:
            continue
        out.append((c, cls.index(lab)))
    return out


def write_validation_csv(task: str, clips, outdir: str) -> int:
    """training/validation/<task>.csv (path,task,label; paths relative to the datasets folder): the held-out
    speakers, for `auris eval` to score the shipped model through the service."""
    import csv
    import os
    rows = [(c.path, task, label(task, c)) for c in clips if label(task, c) and split(c) == "val"]
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, f"{task}.csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["path", "task", "label"])
        w.writerows(rows)
    return len(rows)
