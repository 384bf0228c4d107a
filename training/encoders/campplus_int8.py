"""CAM++ in int8 (gender 2.2's view): models/encoders/campplus/encoder.onnx statically quantised, so that a window
costs about half as much (the encoder was most of live gender's cost: docs/benchmarks.md, session 44).

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
FLOAT = campplus.OUT
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


def quantize(out_file: Path, calibration: np.ndarray) -> None:
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
    quant_pre_process(str(FLOAT / "encoder.onnx"), str(pre))
    front_end = [n.name for n in onnx.load(str(pre)).graph.node if n.name.startswith("/fbank")]
    quantize_static(str(pre), str(out_file), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=["Conv"],
                    nodes_to_exclude=front_end, calibrate_method=CalibrationMethod.MinMax)
    pre.unlink()


def fidelity(out_file: Path) -> dict:
    """Cosine of the int8 embedding to the float graph's on windows the calibration never read."""
    pcm = _windows(FIDELITY_SOURCES, 50, seed=1)
    a, b = embed(FLOAT / "encoder.onnx", pcm), embed(out_file, pcm)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return {"windows": int(len(pcm)), "sources": list(FIDELITY_SOURCES), "mean": round(float(cos.mean()), 4),
            "p1": round(float(np.percentile(cos, 1)), 4), "min": round(float(cos.min()), 4)}


def export(out: Path = OUT) -> dict:
    import onnxruntime
    out.mkdir(parents=True, exist_ok=True)
    calibration = _windows(CALIBRATION_SOURCES, PER_SOURCE, seed=0)
    quantize(out / "encoder.onnx", calibration)
    shutil.copy(FLOAT / "LICENSE", out / "LICENSE")
    base = json.loads((FLOAT / "manifest.json").read_text())
    manifest = {
        "name": "campplus_int8",
        "version": base["version"] + "-int8-static",
        # its embeddings live in campplus's space: gender's head on them reads the speaker map's float windows
        "quantised_from": "campplus",
        **{k: base[k] for k in ("kind", "file", "input", "output", "window_samples", "dim", "max_batch", "front_end")},
        "architecture": base["architecture"] + "; convolutions in int8 (static QDQ: int8 weights per output channel, "
                                               "uint8 activations, MinMax scales), everything else in float",
        "provenance": {**base["provenance"],
                       "derived_from": "models/encoders/campplus/encoder.onnx, quantised by onnxruntime "
                                       f"{onnxruntime.__version__} quantize_static",
                       "calibration": f"{len(calibration)} voiced 1.6 s windows of {', '.join(CALIBRATION_SOURCES)} "
                                      "(clips.csv, seed 0)",
                       "exported_by": "python -m training.encoders.campplus_int8 export"},
        "cosine_to_float": fidelity(out / "encoder.onnx"),
        "macs_per_window": base["macs_per_window"],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def write_golden(path: Path = GOLDEN) -> None:
    """The int8 graph's own embeddings of the two golden windows (onnxruntime, as the service runs it), and their
    cosine to the float reference's (campplus_encoder_golden.json)."""
    from training.encoders.speaker import golden_signal
    ref = json.loads(campplus.GOLDEN.read_text())
    out = {"formula": golden_signal.__doc__, "reference": "models/encoders/campplus_int8/encoder.onnx in onnxruntime",
           "windows": []}
    for w in ref["windows"]:
        e = embed(OUT / "encoder.onnx", golden_signal(w["f0"])[None])[0]
        f = np.asarray(w["embedding"])
        out["windows"].append({"f0": w["f0"], "embedding": [round(float(v), 7) for v in e],
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
