"""Which clips the gender teachers judge, and how their opinions become training targets (training time only).

Beside the labelled speakers of speakers.CORPORA, the teachers (teachers.py) label speech nobody labelled:
VoxLingua107 dev segments (about 600 YouTube speakers in 28 languages; none of the reserved languages is in
the datasets) and the KDE word lists (klettres, ktuberling: one speaker per language), and the ASED speakers
whose gender label was dropped.  Children are left out: their voice gender is not what the model reports.
"""
from __future__ import annotations

import hashlib

from training.data import clips as D
from training.data import speakers as SD

KDE_WORD_LISTS = ("klettres", "ktuberling")  # one voice per language, no speaker ids
UNLABELLED = ("voxlingua",) + KDE_WORD_LISTS
PER_LABELLED_SPEAKER = 24  # teacher opinions per labelled speaker (enough for the probe and for scoring the teachers)


def teacher_clips(clips):
    """Speech clips of adult (or unknown-age) speakers: every clip of the unlabelled sources and of speakers whose
    gender label was dropped, and up to PER_LABELLED_SPEAKER clips (a fixed hash order) of each labelled speaker."""
    use, per_speaker = [], {}
    key = lambda c: hashlib.md5(c.path.encode()).hexdigest()
    for c in sorted(clips, key=key):
        if c.kind != "speech" or c.source not in SD.CORPORA + UNLABELLED or not D.is_adult(c):
            continue
        if c.gender in SD.GENDER_CLASSES:
            n = per_speaker.get(c.speaker, 0)
            if n >= PER_LABELLED_SPEAKER:
                continue
            per_speaker[c.speaker] = n + 1
        use.append(c)
    return sorted(use, key=lambda c: c.idx)


def speaker_of(c) -> str:
    """Speaker key for balanced sampling: the KDE word lists carry one voice per language."""
    return f"{c.source}_{c.language}" if c.source in KDE_WORD_LISTS else c.speaker


def rows_key(clips) -> str:
    """Which clips.csv rows a teachers.npz was made from."""
    return D.rows_sha256(clips)[:16]


def unlabelled_clips(clips):
    """The teacher clips no task labels: they need a feature bank of their own (bank.build(select=...))."""
    return [c for c in teacher_clips(clips) if all(SD.label(t, c) is None for t in SD.TASKS)]
