"""Resemblyzer 0.1.4's speaker encoder (Apache-2.0) as one ONNX graph over a 1.6 s window of
16 kHz samples, its front end included:

  pcm [B, 25600] -> gain to -30 dBFS (the package's audio_norm_target_dBFS, applied per window)
                 -> 40-band mel power spectrum exactly as the package's wav_to_mel_spectrogram
                    (librosa: n_fft 400, hop 160, periodic Hann, centre-padded with zeros, Slaney
                    mel 0-8000 Hz, power 2; not log) -> the first 160 frames
                 -> 3-layer LSTM(40 -> 256) -> last hidden state -> Linear -> ReLU -> L2 norm
                 -> embedding [B, 256]

Why the front end lives in the graph and not in the addon: the service embeds only some
windows of speech (src/inference/encoder-stage.ts), so the spectrum is computed for those
windows alone, by the same code for files and streams. The golden test
(training/tests/test_encoders.py) checks the graph against librosa + the package's PyTorch model.

  python -m training.encoders.speaker export      # -> models/encoders/speaker/
"""
from __future__ import annotations

import argparse
import functools
import json
import shutil
from pathlib import Path

import numpy as np
import torch
from torch import nn

SR = 16000
N_FFT = 400
HOP = 160
N_MELS = 40
FRAMES = 160
WINDOW_SAMPLES = FRAMES * HOP  # 25600 = 25 steps of 64 ms
TARGET_DBFS = -30.0
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "models" / "encoders" / "speaker"


def package_dir() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or spec.origin is None:
        raise SystemExit("pip install --no-deps Resemblyzer==0.1.4 (the weights ship inside the package)")
    return Path(spec.origin).parent


def mel_basis() -> np.ndarray:
    import librosa
    return librosa.filters.mel(sr=SR, n_fft=N_FFT, n_mels=N_MELS).astype(np.float32)  # [40, 201]


class SpeakerEncoder(nn.Module):
    """pcm [B, 25600] -> L2-normed embedding [B, 256] (the front end of the package, in torch ops)."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(N_MELS, 256, 3, batch_first=True)
        self.linear = nn.Linear(256, 256)
        n = np.arange(N_FFT)
        window = 0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)  # periodic Hann (librosa's get_window)
        k = np.arange(N_FFT // 2 + 1)[:, None]
        ang = 2 * np.pi * k * n[None, :] / N_FFT
        dft = np.concatenate([np.cos(ang) * window, -np.sin(ang) * window]).astype(np.float32)  # [402, 400]
        self.register_buffer("dft", torch.from_numpy(dft)[:, None, :])
        self.register_buffer("mel", torch.from_numpy(mel_basis()))

    def features(self, pcm: torch.Tensor) -> torch.Tensor:
        """[B, 25600] -> mel power frames [B, 160, 40] (what the package feeds its LSTM)."""
        power = pcm.pow(2).mean(dim=1, keepdim=True)
        gain = (10.0 ** (TARGET_DBFS / 20.0)) / torch.sqrt(power + 1e-10)
        x = nn.functional.pad((pcm * gain)[:, None, :], (N_FFT // 2, N_FFT // 2))
        spec = nn.functional.conv1d(x, self.dft, stride=HOP)[:, :, :FRAMES]  # [B, 402, 160]
        re, im = spec[:, : N_FFT // 2 + 1], spec[:, N_FFT // 2 + 1:]
        return torch.matmul(self.mel, re * re + im * im).transpose(1, 2)

    def embed_mels(self, mels: torch.Tensor) -> torch.Tensor:
        _, (hidden, _) = self.lstm(mels)
        raw = torch.relu(self.linear(hidden[-1]))
        return raw / torch.norm(raw, dim=1, keepdim=True).clamp_min(1e-12)

    def forward(self, pcm: torch.Tensor) -> torch.Tensor:
        return self.embed_mels(self.features(pcm))


def load() -> SpeakerEncoder:
    model = SpeakerEncoder()
    state = torch.load(package_dir() / "pretrained.pt", map_location="cpu")["model_state"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    # similarity_weight/bias belong to the GE2E training loss, not to the embedding
    assert set(missing) == {"dft", "mel"} and set(unexpected) <= {"similarity_weight", "similarity_bias"}, (missing, unexpected)
    return model.eval()


@functools.lru_cache(maxsize=1)
def _package_encoder():
    from resemblyzer import VoiceEncoder
    return VoiceEncoder(device="cpu", verbose=False)


def reference(pcm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The package's own path for one window: librosa mel of the gain-normalised window + its torch model."""
    import librosa
    wav = pcm.astype(np.float32)
    wav = wav * (10.0 ** (TARGET_DBFS / 20.0)) / np.sqrt(np.mean(wav.astype(np.float64) ** 2) + 1e-10)
    mels = librosa.feature.melspectrogram(y=wav.astype(np.float32), sr=SR, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS)
    mels = mels.astype(np.float32).T[:FRAMES]
    with torch.no_grad():
        emb = _package_encoder()(torch.from_numpy(mels)[None]).numpy()[0]
    return mels, emb


def export(out: Path = OUT) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    diff = export_pcm_encoder(load(), out / "encoder.onnx")
    shutil.copy(package_dir().parent / "Resemblyzer-0.1.4.dist-info" / "LICENSE", out / "LICENSE")
    manifest = {
        "name": "speaker",
        "version": "resemblyzer-0.1.4",
        "kind": "pcm_window_encoder",
        "file": "encoder.onnx",
        "input": "pcm",
        "output": "embedding",
        "window_samples": WINDOW_SAMPLES,
        "dim": 256,
        "front_end": f"in the graph: gain to {TARGET_DBFS} dBFS per window; librosa melspectrogram n_fft {N_FFT}, hop {HOP}, "
                     f"periodic Hann, centre zero padding, Slaney mel {N_MELS} bands 0-8000 Hz, power 2; first {FRAMES} frames",
        "architecture": "LSTM(40, 256, 3 layers) -> last hidden -> Linear(256, 256) -> ReLU -> L2 norm",
        "provenance": {
            "package": "Resemblyzer==0.1.4 (PyPI), file resemblyzer/pretrained.pt",
            "authors": "Resemble AI (Corentin Jemine's GE2E speaker encoder)",
            "trained_on": "LibriSpeech, VoxCeleb1 and VoxCeleb2 by its authors (package README)",
            "licence": "Apache-2.0 (LICENSE beside this file, copied from the package)",
            "exported_by": "python -m training.encoders.speaker export",
        },
        "onnx_vs_torch_max_abs_diff": diff,
        "macs_per_window": macs(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def export_pcm_encoder(model: nn.Module, path: Path) -> float:
    """Writes a pcm [B, samples] -> embedding [B, D] module as ONNX (batch dynamic) and returns the largest difference
    between onnxruntime and PyTorch on four test windows (asserted under 1e-4). Shared by every encoder export."""
    import onnxruntime as ort
    x = torch.from_numpy(test_signal()[None])
    torch.onnx.export(model, (x,), str(path), input_names=["pcm"], output_names=["embedding"],
                      dynamic_axes={"pcm": {0: "batch"}, "embedding": {0: "batch"}}, opset_version=17, dynamo=False)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    batch = np.stack([test_signal(seed) for seed in range(4)])
    got = sess.run(["embedding"], {"pcm": batch})[0]
    with torch.no_grad():
        want = model(torch.from_numpy(batch)).numpy()
    diff = float(np.abs(got - want).max())
    assert diff < 1e-4, diff
    return diff


def macs() -> int:
    lstm = 4 * 256 * (40 + 256) + 2 * 4 * 256 * (256 + 256)
    return int(FRAMES * (lstm + (N_FFT // 2 + 1) * 2 * N_FFT + N_MELS * (N_FFT // 2 + 1)) + 256 * 256)


def test_signal(seed: int = 0) -> np.ndarray:
    """A voice-like test window: a 120-220 Hz harmonic tone with vibrato and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(WINDOW_SAMPLES) / SR
    f0 = 120 + 100 * seed / 4 + 8 * np.sin(2 * np.pi * 5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    x = sum(np.sin(h * phase) / h for h in range(1, 12)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2)
    return (0.1 * x + 0.003 * rng.standard_normal(WINDOW_SAMPLES)).astype(np.float32)


def golden_signal(f0: float) -> np.ndarray:
    """Noise-free voice-like window, the same formula as test/models/encoder.test.ts: 10 harmonics of
    f0 with a 5 Hz vibrato of 4 % and a 3 Hz tremolo, computed in float64."""
    t = np.arange(WINDOW_SAMPLES, dtype=np.float64) / SR
    phase = 2 * np.pi * f0 * (t - 0.04 * np.cos(2 * np.pi * 5 * t) / (2 * np.pi * 5))
    x = sum(np.sin(h * phase) / h for h in range(1, 11)) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    return (0.05 * x).astype(np.float32)


def write_golden(path: Path) -> None:
    """Embeddings of two golden windows by the package's own path (librosa + its PyTorch model)."""
    out = {"formula": golden_signal.__doc__, "windows": []}
    for f0 in (110.0, 220.0):
        _, emb = reference(golden_signal(f0))
        out["windows"].append({"f0": f0, "embedding": [round(float(v), 7) for v in emb]})
    path.write_text(json.dumps(out) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["export", "golden"])
    ap.add_argument("--out", default=str(ROOT / "test/fixtures/speaker_encoder_golden.json"), help="golden: where to write")
    a = ap.parse_args()
    if a.command == "golden":
        write_golden(Path(a.out))
        return
    print(json.dumps(export(), indent=2))


if __name__ == "__main__":
    main()
