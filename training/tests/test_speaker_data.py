import collections
import os

import numpy as np
import pytest

from training.data import channels as CH
from training.data import clips as D
from training.data import speakers as SD

needs_data = pytest.mark.skipif(not os.path.exists(os.path.join(D.DATASETS, "clips.csv")), reason="datasets not available")


@needs_data
def test_speaker_splits_are_speaker_disjoint_with_both_genders_held_out():
    clips = D.load_clips()
    side = collections.defaultdict(set)
    for c in clips:
        if any(SD.label(t, c) for t in SD.TASKS):
            side[c.speaker].add(SD.split(c))
    assert all(len(s) == 1 for s in side.values())
    for corpus in SD.CORPORA:
        for sp in ("train", "val"):
            genders = {c.gender for c in clips if c.source == corpus and SD.split(c) == sp and SD.label("gender", c)}
            assert genders == {"female", "male"}, (corpus, sp, genders)


@needs_data
def test_emotion_map_and_corpora():
    clips = D.load_clips()
    for c in clips:
        e = SD.label("emotions", c)
        if c.emotion in ("fear", "fearful", "surprised"):
            assert e is None
        if c.source in ("baved", "hyke", "fsdd", "voxlingua"):
            assert e is None
        if e is not None:
            assert e in SD.EMOTION_CLASSES
    classes = {(c.source, SD.label("emotions", c)) for c in clips if SD.label("emotions", c)}
    for corpus in SD.EMOTION_CORPORA:
        assert {k for s, k in classes if s == corpus} == set(SD.EMOTION_CLASSES), corpus


def test_phone_channel_keeps_length_and_level_for_every_codec():
    rng = np.random.default_rng(0)
    t = np.arange(24000) / 16000
    x = (0.2 * np.sin(2 * np.pi * 700 * t) * (1 + np.sin(2 * np.pi * 3 * t)) + 0.01 * rng.standard_normal(t.size)).astype(np.float32)
    for codec in CH.CODECS:
        (y,) = CH.phone_batch([x], codec, rng, loss=0.0)
        assert y.shape == x.shape, codec
        lx, ly = 10 * np.log10(np.mean(x ** 2)), 10 * np.log10(np.mean(y ** 2) + 1e-12)
        assert abs(lx - ly) < 6, (codec, lx, ly)
        spec = np.abs(np.fft.rfft(y))
        f = np.fft.rfftfreq(y.size, 1 / 16000)
        assert spec[f > 4200].sum() < 0.02 * spec.sum(), codec  # narrow band: nothing above 4 kHz


def test_packet_loss_zeroes_whole_frames():
    rng = np.random.default_rng(1)
    y = CH.packet_loss(np.ones(8000, dtype=np.float32), 0.5, rng)
    frames = y.reshape(-1, 160)
    assert set(np.unique(frames.min(axis=1))) <= {0.0, 1.0}
    assert 0 < (frames[:, 0] == 0).sum() < 50
