"""A trained network as a model folder: model.onnx checked against PyTorch, the manifest's shared fields, and (for the
speaker recipe) the whole folder: streaming graphs, manifest.json, metrics.json and MODEL_CARD.md (cards/)."""
from __future__ import annotations

import json
import os

import numpy as np
import torch

from training.data import clips as D
from training.data import speakers as SD
from training.models.net import context_steps, fold_lifter, macs_per_step

FEATURES = {"kind": "logmel", "sample_rate": 16000, "n_fft": 512, "hop": 256, "n_mels": 64,
            "fmin": 50, "fmax": 8000, "log_floor": 1e-8, "frames_per_step": 4}


def export_onnx(model, fn: str, n_classes: int) -> float:
    """model.onnx (opset 17, dynamic batch and time); returns the largest onnxruntime vs PyTorch difference."""
    import onnx
    import onnxruntime as ort
    model.eval()
    fold_lifter(model)  # the cepstral lifter becomes part of conv1: the graph keeps the plain shape streaming.py knows
    torch.onnx.export(model, (torch.randn(1, 64, 64),), fn, input_names=["features"], output_names=["probs"],
                      opset_version=17, dynamic_axes={"features": {0: "B", 1: "T"}, "probs": {0: "B", 1: "S"}},
                      dynamo=False, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(fn))
    sess = ort.InferenceSession(fn, providers=["CPUExecutionProvider"])
    diff = 0.0
    for b, s in ((1, 1), (2, 7), (1, 150)):
        x = torch.randn(b, 4 * s, 64) * 3 - 5
        with torch.no_grad():
            ref = model(x).numpy()
        out = sess.run(["probs"], {"features": x.numpy()})[0]
        assert out.shape == (b, s, n_classes), out.shape
        diff = max(diff, float(np.abs(out - ref).max()))
    assert diff < 1e-4, diff
    return diff


def architecture(cfg: dict, width: bool) -> str:
    return ((f"cepstral lifter ({cfg['lifter']} coefficients: spectral envelope only, no pitch harmonics) + "
             if cfg.get("lifter") else "") + f"gain-norm({cfg.get('norm', 'mean')} over {cfg['norm_k']} frames) + "
            f"2 frame convs + maxpool4 + dilated residual convs {list(cfg['dil'])}" + (f", {cfg['c2']} channels" if width else ""))


def manifest_head(task: str, version: str, classes, cfg: dict, used_clips) -> dict:
    """The manifest fields the service reads (name ... lookahead_ms) and the training data hash."""
    left, right = context_steps(cfg["norm_k"], cfg["dil"], cfg.get("norm", "mean"))
    return {"name": task, "version": version, "placeholder": False, "file": "model.onnx",
            "input": "features", "output": "probs", "raw_keys": list(classes), "features": dict(FEATURES),
            "context": {"left_steps": left, "right_steps": right},
            "receptive_field_ms": (left + right + 1) * 64, "lookahead_ms": right * 64 + 8,
            "training_data_sha256": D.rows_sha256(used_clips)}


def model_section(model, cfg: dict, diff: float, width: bool) -> dict:
    return {"parameters": sum(p.numel() for p in model.parameters()), "macs_per_step": macs_per_step(model),
            "onnx_opset": 17, "architecture": architecture(cfg, width), "onnx_vs_torch_max_abs_diff": diff}


def write_json(d: str, name: str, obj) -> None:
    with open(os.path.join(d, name), "w") as fh:
        json.dump(obj, fh, indent=2)
        fh.write("\n")


def write_model_dir(task, d, manifest, res, clips):
    """The files of a model folder besides model.onnx: stream graphs, manifest.json, metrics.json and MODEL_CARD.md."""
    from training.cards.render import write_card
    from training.export.streaming import add_streaming
    try:
        add_streaming(d, manifest)
    except ValueError as e:  # a graph the converter does not know (e.g. members merged side by side): windowed streaming only
        print(f"[{task}] no streaming graphs: {e}", flush=True)
    write_json(d, "manifest.json", manifest)
    write_json(d, "metrics.json", res)
    write_card(d, clips)


VERSIONS = {"gender": "2.0.0", "arousal": "2.0.0", "emotions": "1.0.0"}  # the speaker recipe's versions by default


def export(recipe, model, clips, res, out_root: str, version: str | None = None, reproduce: str | None = None) -> str:
    """<out_root>/<task>/ of a speaker-recipe network (recipes/config.SpeakerRecipe `recipe`); returns the folder."""
    from training.cards.render import manifest_metrics
    from training.recipes.config import command
    task = recipe.task
    d = os.path.join(out_root, task)
    os.makedirs(d, exist_ok=True)
    classes, cfg = SD.CLASSES[task], recipe.model_config()
    diff = export_onnx(model, os.path.join(d, "model.onnx"), len(classes))
    manifest = manifest_head(task, version or VERSIONS[task], classes, cfg, [c for c in clips if SD.label(task, c) is not None])
    manifest["metrics"] = manifest_metrics(task, res, os.path.join(d, "loco.json"))
    manifest["model"] = model_section(model, cfg, diff, width=True)
    manifest["training"] = {"examples_per_epoch": recipe.examples, "epochs": recipe.epochs, "seed": recipe.seed,
                            "lr": recipe.lr, "ema": recipe.ema, "reproduce": reproduce or command(recipe)}
    write_model_dir(task, d, manifest, res, clips)
    print(f"[{task}] exported {d} (onnx diff {diff:.1e}, context {manifest['context']})", flush=True)
    return d
