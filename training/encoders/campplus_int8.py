"""CAM++ in int8 (gender's view since 2.2): CAM++ statically quantised, so that a window costs about half as much
(the encoder was most of live gender's cost: docs/benchmarks.md, session 44). Since gender 2.3 the float graph it is
quantised from hears only up to 4.2 kHz (campplus.KaldiFbank top_hz = campplus.BAND_TOP_HZ: the bands centred above
it zeroed), which gender's head reads better on clean and phone audio alike (models/gender/MODEL_CARD.md); that float
graph is exported to a temporary folder here and not shipped (the speaker map keeps models/encoders/campplus/, full
band).

Static, not dynamic, quantisation: every scale is fixed here, from calibration windows, so a window's embedding does
not depend on the windows it is batched with and a live stream embeds exactly what a file job embeds (session 18's
dynamic int8 did not). Only the convolutions are quantised (QDQ: int8 weights per output channel, uint8 activations
with MinMax scales); the in-graph fbank front end, the batch norms, the masks and the pooling stay in float
(quantising every op type moved the embeddings to a mean cosine of 0.77 with the float graph's).

Calibration: voiced 1.6 s windows (windows.voiced_windows, at most 2 per clip) of voxlingua, ravdess and baved
clips of clips.csv, 100 each, in a fixed shuffled order: training sources of ours, none of the corpora gender's
validation holds out as never heard by the network (speechocean, audiomnist_az), none of the reserved ones.

  python -m training.encoders.campplus_int8 export   # -> models/encoders/campplus_int8/ (~1 min)
  python -m training.encoders.campplus_int8 golden   # -> test/fixtures/campplus_int8_encoder_golden.json
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
from pathlib import Path

import numpy as np

from training.encoders import campplus, windows

ROOT = Path(__file__).resolve().parents[2]
FLOAT = campplus.OUT  # the shipped full-band float graph (the speaker map's)
OUT = ROOT / "models" / "encoders" / "campplus_int8"
GOLDEN = ROOT / "test" / "fixtures" / "campplus_int8_encoder_golden.json"
CALIBRATION_SOURCES = ("voxlingua", "ravdess", "baved")
PER_SOURCE = 100
# fidelity is measured on windows of sources the calibration did not read
FIDELITY_SOURCES = ("nemo", "urdu", "hyke", "ased")


def _windows(sources: tuple[str, ...], per_source: int, seed: int) -> np.ndarray:
    """Up to 2 voiced windows per clip, `per_source` of each source, clips in a seeded shuffled order."""
    from training.data.clips import DATASETS, decode
    rows = [r for r in csv.DictReader(open(Path(DATASETS) / "clips.csv")) if r["source"] in sources and r["kind"] == "speech"]
    random.Random(seed).shuffle(rows)
    got: dict[str, list[np.ndarray]] = {s: [] for s in sources}
    for r in rows:
        if all(len(v) >= per_source for v in got.values()):
            break
        if len(got[r["source"]]) >= per_source:
            continue
        for w in windows.voiced_windows(decode(r["path"]))[1][:2]:
            if len(got[r["source"]]) < per_source:
                got[r["source"]].append(w)
    return np.concatenate([np.stack(v) for v in got.values() if v])


def embed(path: Path, pcm: np.ndarray) -> np.ndarray:
    """[n, 25600] -> [n, 192] through the graph at `path` (one thread, calls of 4 windows)."""
    from training.encoders.embed import session
    from training.encoders.embed_affect import campplus_embeddings
    return campplus_embeddings(session(str(path)), pcm)


def quantize(float_file: Path, out_file: Path, calibration: np.ndarray) -> None:
    import onnx
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.i = 0

        def get_next(self):
            if self.i >= len(calibration):
                return None
            self.i += 4
            return {"pcm": calibration[self.i - 4:self.i]}

    pre = out_file.with_suffix(".pre.onnx")
    quant_pre_process(str(float_file), str(pre))
    front_end = [n.name for n in onnx.load(str(pre)).graph.node if n.name.startswith("/fbank")]
    quantize_static(str(pre), str(out_file), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=["Conv"],
                    nodes_to_exclude=front_end, calibrate_method=CalibrationMethod.MinMax)
    pre.unlink()


def fidelity(float_file: Path, out_file: Path) -> dict:
    """Cosine of the int8 embedding to the float graph's on windows the calibration never read."""
    pcm = _windows(FIDELITY_SOURCES, 50, seed=1)
    a, b = embed(float_file, pcm), embed(out_file, pcm)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return {"windows": int(len(pcm)), "sources": list(FIDELITY_SOURCES), "mean": round(float(cos.mean()), 4),
            "p1": round(float(np.percentile(cos, 1)), 4), "min": round(float(cos.min()), 4)}


def export(out: Path = OUT, top_hz: float = campplus.BAND_TOP_HZ) -> dict:
    import tempfile
    import onnxruntime
    out.mkdir(parents=True, exist_ok=True)
    calibration = _windows(CALIBRATION_SOURCES, PER_SOURCE, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        float_dir = Path(tmp)
        base = campplus.export(float_dir, top_hz=top_hz)
        quantize(float_dir / "encoder.onnx", out / "encoder.onnx", calibration)
        cosine = fidelity(float_dir / "encoder.onnx", out / "encoder.onnx")
    shutil.copy(FLOAT / "LICENSE", out / "LICENSE")
    manifest = {
        "name": "campplus_int8",
        "version": base["version"] + f"-band{top_hz:g}-int8-static",
        # no "quantised_from": the narrower band moves its embeddings out of campplus's space (gender ships a head
        # on campplus for the speaker map's summary instead: manifest views.speaker_heads)
        **{k: base[k] for k in ("kind", "file", "input", "output", "window_samples", "dim", "max_batch", "front_end")},
        "architecture": base["architecture"] + "; convolutions in int8 (static QDQ: int8 weights per output channel, "
                                               "uint8 activations, MinMax scales), everything else in float",
        "provenance": {**base["provenance"],
                       "derived_from": f"`python -m training.encoders.campplus export --top-hz {top_hz:g}` (not shipped), "
                                       f"quantised by onnxruntime {onnxruntime.__version__} quantize_static",
                       "calibration": f"{len(calibration)} voiced 1.6 s windows of {', '.join(CALIBRATION_SOURCES)} "
                                      "(clips.csv, seed 0)",
                       "exported_by": "python -m training.encoders.campplus_int8 export"},
        "cosine_to_float": cosine,
        "macs_per_window": base["macs_per_window"],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def write_golden(path: Path = GOLDEN, top_hz: float = campplus.BAND_TOP_HZ) -> None:
    """The int8 graph's own embeddings of the two golden windows (onnxruntime, as the service runs it), and their
    cosine to the float reference's on the same band (campplus.reference: kaldi-native-fbank, then the
    package's weights in torch)."""
    from training.encoders.speaker import golden_signal
    model = campplus.load(top_hz=top_hz)
    out = {"formula": golden_signal.__doc__, "reference": "models/encoders/campplus_int8/encoder.onnx in onnxruntime",
           "windows": []}
    for f0 in (110.0, 220.0):
        e = embed(OUT / "encoder.onnx", golden_signal(f0)[None])[0]
        f = campplus.reference(golden_signal(f0), model)
        out["windows"].append({"f0": f0, "embedding": [round(float(v), 7) for v in e],
                               "cosine_to_float_reference": round(float(e @ f / np.linalg.norm(e) / np.linalg.norm(f)), 4)})
    path.write_text(json.dumps(out) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["export", "golden"])
    a = ap.parse_args()
    if a.command == "golden":
        write_golden()
        return
    print(json.dumps(export(), indent=2))


if __name__ == "__main__":
    main()
