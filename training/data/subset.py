"""A small, fixed part of the clip table for smoke runs (`python -m training rebuild TASK --quick`, the tests): every
source keeps a few speakers (or languages, songs, folds) on each side of every split, a few clips of each with as many
different labels as it has, and at least one clip of every gender, emotion and arousal label it has on each side, so
every task still has every class in training and in validation, in every corpus."""
from __future__ import annotations

import hashlib

from training.data import clips as D
from training.data import speakers as SD


def _md5(s: str) -> str:
    return hashlib.md5(s.encode()).hexdigest()


def quick_subset(clips, groups: int = 3, per_group: int = 3):
    """Up to `groups` groups (a speaker, else a language or the source itself) per (source, split, speaker split)
    stratum, and up to `per_group` clips per group, different labels first; in file order."""
    strata: dict = {}
    for c in clips:
        stratum = (c.source, D.split_of(c), SD.split(c) if c.source in SD.CORPORA else "")
        group = c.speaker or c.language or c.path.split("@")[0].rsplit("/", 1)[0]
        strata.setdefault(stratum, {}).setdefault(group, []).append(c)
    keep = set()
    for by_group in strata.values():
        for g in sorted(by_group, key=_md5)[:groups]:
            order = sorted(by_group[g], key=lambda c: _md5(c.path))
            seen, picked = set(), []
            for c in order:  # one clip per label first, then the group's other clips
                if (c.kind, c.emotion, c.arousal) not in seen:
                    seen.add((c.kind, c.emotion, c.arousal))
                    picked.append(c)
            picked += [c for c in order if c not in picked]
            keep.update(c.idx for c in picked[:per_group])
    # every label a (source, split) stratum has stays in it: each corpus keeps all its classes for every task
    for stratum, by_group in strata.items():
        members = sorted((c for cs in by_group.values() for c in cs), key=lambda c: _md5(c.path))
        for field in ("gender", "emotion", "arousal"):
            have = {getattr(c, field) for c in members if c.idx in keep}
            for c in members:
                if getattr(c, field) not in have:
                    have.add(getattr(c, field))
                    keep.add(c.idx)
    return [c for c in clips if c.idx in keep]
