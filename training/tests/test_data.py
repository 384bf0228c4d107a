import os

import pytest

from training.data import clips as D

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(D.DATASETS, "clips.csv")), reason="datasets not available")


def test_speaker_and_source_disjoint():
    clips = D.load_clips()
    tr = [c for c in clips if c.split == "train"]
    va = [c for c in clips if c.split == "val"]
    spk_tr = {c.speaker for c in tr if c.speaker}
    spk_va = {c.speaker for c in va if c.speaker}
    assert not (spk_tr & spk_va)
    for s in D.VAL_SOURCES_WHOLE:
        assert not any(c.source == s for c in tr)
    songs = lambda cs: {os.path.basename(c.path).split("@")[0] for c in cs if c.source == "jamendo"}
    assert not (songs(tr) & songs(va))
    langs = lambda cs, s: {c.language for c in cs if c.source == s}
    for s in ("voxlingua", "klettres", "ktuberling"):
        assert not (langs(tr, s) & langs(va, s))


def test_task_labels():
    clips = D.load_clips()
    for c in clips:
        g = D.task_label("gender", c)
        if g is not None:
            assert c.source != "fsdd" and D.is_adult(c)
        a = D.task_label("arousal", c)
        if c.emotion == "disgust":
            assert a is None
        if c.source == "ravdess" and c.emotion in ("angry", "fearful", "happy", "surprised"):
            assert a == "high"
        if c.source == "ravdess" and c.emotion in ("sad", "calm"):
            assert a == "low"
    assert not any(c.split == "train" and D.task_label("arousal", c) for c in clips if c.source == "urdu")


def test_urdu_gender_speaker_disjoint():
    clips = D.load_clips()
    urdu = [c for c in clips if c.source == "urdu" and D.task_label("gender", c)]
    tr = {c.speaker for c in urdu if D.task_split("gender", c) == "train"}
    va = {c.speaker for c in urdu if D.task_split("gender", c) == "val"}
    assert tr and va and not (tr & va)
    for side in (tr, va):  # both genders on both sides
        assert any("_SF" in s for s in side) and any("_SM" in s for s in side)
    # speech and arousal still hold URDU out whole
    assert all(D.task_split(t, c) == "val" for t in ("speech", "arousal") for c in clips if c.source == "urdu")
