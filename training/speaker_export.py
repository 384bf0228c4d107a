"""Export of a speaker model (gender, arousal, emotions) to models/<task>/: model.onnx checked against PyTorch,
the streaming graphs, manifest.json, metrics.json and MODEL_CARD.md (speaker_card.py)."""
from __future__ import annotations

import json
import os

import numpy as np
import torch

from . import data as D
from . import speaker_data as SD
from .model import context_steps, fold_lifter, macs_per_step
from .speaker_card import manifest_metrics, write_card
from .speaker_config import CONFIGS, DEFAULTS

VERSIONS = {"gender": "2.0.0", "arousal": "2.0.0", "emotions": "1.0.0"}
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


def reproduce_cmd(task, args) -> str:
    cmd = f"python -m training.speaker_train --task {task}"
    for k, v in DEFAULTS.items():
        if getattr(args, k) != v:
            cmd += f" --{k} {getattr(args, k):g}"
    cmd += f" --seed {args.seed}" if args.seed != 1 else ""
    for flag in ("distill", "dvec", "variants", "embed_steps", "adv", "band_drop", "pitch_counter"):  # the experiments' options, where used
        v = getattr(args, flag, 0)
        cmd += (f" --{flag.replace('_', '-')}" + ("" if v is True else f" {v:g}")) if v else ""
    cmd += f" --embed-then {args.embed_then}" if getattr(args, "embed_steps", 0) and args.embed_then != "head" else ""
    cmd += f" --leave-out-emotions {args.leave_out_emotions}" if getattr(args, "leave_out_emotions", "") else ""
    return cmd + (f" --cfg '{args.cfg}'" if getattr(args, "cfg", None) else "")


def export(task, model, clips, res, out_root, args):
    d = os.path.join(out_root, task)
    os.makedirs(d, exist_ok=True)
    classes = SD.CLASSES[task]
    diff = export_onnx(model, os.path.join(d, "model.onnx"), len(classes))
    cfg = CONFIGS[task]
    left, right = context_steps(cfg["norm_k"], cfg["dil"], cfg.get("norm", "mean"))
    used = [c for c in clips if SD.label(task, c) is not None]
    manifest = {
        "name": task, "version": VERSIONS[task], "placeholder": False, "file": "model.onnx",
        "input": "features", "output": "probs", "raw_keys": classes, "features": FEATURES,
        "context": {"left_steps": left, "right_steps": right},
        "receptive_field_ms": (left + right + 1) * 64, "lookahead_ms": right * 64 + 8,
        "training_data_sha256": D.rows_sha256(used),
        "metrics": manifest_metrics(task, res, os.path.join(d, "loco.json")),
        "model": {"parameters": sum(p.numel() for p in model.parameters()), "macs_per_step": macs_per_step(model),
                  "onnx_opset": 17,
                  "architecture": (f"cepstral lifter ({cfg['lifter']} coefficients: spectral envelope only, no pitch harmonics) + "
                                   if cfg.get("lifter") else "") + f"gain-norm({cfg.get('norm', 'mean')} over {cfg['norm_k']} frames) + 2 frame convs + "
                                  f"maxpool4 + dilated residual convs {list(cfg['dil'])}, {cfg['c2']} channels",
                  "onnx_vs_torch_max_abs_diff": diff},
        "training": {"examples_per_epoch": args.examples, "epochs": args.epochs, "seed": args.seed, "lr": args.lr,
                     "ema": args.ema, "reproduce": reproduce_cmd(task, args)},
    }
    from .streaming import add_streaming
    add_streaming(d, manifest)
    for name, obj in (("manifest.json", manifest), ("metrics.json", res)):
        with open(os.path.join(d, name), "w") as fh:
            json.dump(obj, fh, indent=2)
            fh.write("\n")
    write_card(task, d, clips)
    print(f"[{task}] exported {d} (onnx diff {diff:.1e}, context {left}/{right})", flush=True)
