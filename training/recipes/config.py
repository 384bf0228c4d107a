"""The hyperparameters of one training run as one object, in one place.

A recipe file (recipes/<task>/<version>.json) holds them per step; the command lines of recipes/longform.py,
recipes/speaker.py and validate/loco take them as options; the manifest records the command that gives them back
(`command()`).  Nothing here is a module-level switch: a run's options travel with it as this object.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
from dataclasses import dataclass, field

from training.models.configs import LONGFORM, SPEAKER


@dataclass
class LongformRecipe:
    """The 1.x recipe (recipes/longform.py): long-form examples synthesised from clips (augment.Synth), cached."""
    task: str
    examples: int = 20000          # synthetic examples (the feature cache), each 64 steps
    epochs: int = 12
    seed: int = 1
    lr: float = 3e-3
    ema: float | None = None       # decay of the exported weight average; None: EMA_DEFAULT of the task
    variants: bool = True          # gender: WORLD voice variants (data/voice_variants.py)
    gender_high_p: float = 0.4     # gender: share of draws from high-arousal clips
    ordinal: float = 0.0           # arousal: ordinal soft targets (mass moved to the neighbour class)
    sources: tuple = ()            # the clip table's sources it may use (labelled and backgrounds); () = all of them
    cfg: dict = field(default_factory=dict)  # overrides of models.configs.LONGFORM[task]

    MODULE = "training.recipes.longform"
    EMA_DEFAULT = {"gender": 0.998}

    def ema_decay(self) -> float:
        return self.ema if self.ema is not None else self.EMA_DEFAULT.get(self.task, 0.0)

    def model_config(self) -> dict:
        return {**LONGFORM[self.task], **self.cfg}

    def clip_table(self, clips):
        """The clips this recipe learns and validates on: clips.csv has grown since the 1.x models were trained
        (ased, ettsdb, hyke, nemo), and their recipes keep the sources they were made from."""
        return [c for c in clips if not self.sources or c.source in self.sources]


@dataclass
class SpeakerRecipe:
    """The 2.x recipe (recipes/speaker.py): speaker-balanced draws from the feature bank (data/bank.py)."""
    task: str
    examples: int = 12800          # examples per epoch, drawn afresh
    epochs: int = 10
    lr: float = 3e-3
    ema: float = 0.998
    seed: int = 1
    distill: bool = False          # gender: add teacher-labelled speech (data/distill.py)
    dvec: float = 0.0              # weight of the speaker-encoder (d-vector) distillation loss
    variants: float = 0.0          # gender: share of examples made of WORLD voice variants (data/variant_bank.py)
    embed_steps: int = 0           # gender: steps of speaker-encoder regression before the labels (embed_pretrain.py)
    adv: float = 0.0               # gradient reversal of the nuisance (recipes/speaker.NUISANCE); negative: multi-task
    band_drop: float = 0.0         # share of examples whose bands outside ~300-3400 Hz are attenuated
    pitch_counter: float = 0.0     # gender: share of examples made of clips whose pitch points to the other gender
    embed_then: str = "head"       # after embed_steps: head, probe or finetune
    leave_out_emotions: tuple = () # corpus emotion labels kept out of training (scoring keeps them)
    speaker_fraction: float = 1.0  # share of each corpus' and gender's training speakers kept (learning curve)
    corpora_count: int = 0         # leave-one-corpus-out: train each fold on this many other corpora (0: all)
    cfg: dict = field(default_factory=dict)  # overrides of models.configs.SPEAKER[task]

    MODULE = "training.recipes.speaker"

    def model_config(self) -> dict:
        return {**SPEAKER[self.task], **self.cfg}


LISTS = ("leave_out_emotions", "sources")  # comma-separated on the command line, lists in a recipe file
HELP = {
    "examples": "training examples (longform: synthetic examples cached; speaker: per epoch)",
    "cfg": "JSON overrides of the model config, e.g. '{\"c2\": 96}'",
    "leave_out_emotions": "comma-separated corpus emotion labels kept out of training (e.g. calm)",
    "sources": "comma-separated sources of the clip table to use (default: all)",
}


def _fields(cls):
    return [f for f in dataclasses.fields(cls) if f.name != "task"]


def _default(f):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def add_arguments(ap: argparse.ArgumentParser, cls) -> None:
    """One command-line option per hyperparameter of `cls` (defaults: the recipe's)."""
    for f in _fields(cls):
        flag, d = "--" + f.name.replace("_", "-"), _default(f)
        h = HELP.get(f.name, f.name.replace("_", " "))
        if isinstance(d, bool):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, default=d, help=h)
        elif f.name == "cfg" or f.name in LISTS:
            ap.add_argument(flag, default="", help=h)
        else:
            ap.add_argument(flag, type=type(d) if d is not None else float, default=d, help=h)


def from_args(cls, a: argparse.Namespace, task: str | None = None):
    kw = {f.name: getattr(a, f.name) for f in _fields(cls)}
    kw["cfg"] = json.loads(kw["cfg"]) if isinstance(kw["cfg"], str) and kw["cfg"] else (kw["cfg"] or {})
    for k in LISTS:
        if isinstance(kw.get(k), str):
            kw[k] = tuple(x.strip() for x in kw[k].split(",") if x.strip())
    return cls(task=task or a.task, **kw)


def from_dict(cls, d: dict):
    d = dict(d)
    for k in LISTS:
        if k in d:
            d[k] = tuple(d[k])
    unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown hyperparameters {sorted(unknown)}")
    return cls(**d)


def to_dict(r) -> dict:
    d = dataclasses.asdict(r)
    for k in LISTS:
        if k in d:
            d[k] = list(d[k])
    return d


def command(r, module: str | None = None, skip=()) -> str:
    """The command line that trains this run again: the options that differ from the recipe's defaults."""
    cmd = f"python -m {module or r.MODULE} --task {r.task}"
    for f in _fields(type(r)):
        v, d = getattr(r, f.name), _default(f)
        if f.name in skip or v == d or (f.name == "ema" and isinstance(r, LongformRecipe) and v == r.ema_decay()
                                        and d is None and v == r.EMA_DEFAULT.get(r.task, 0.0)):
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(v, bool):
            cmd += f" {flag}" if v else f" --no-{f.name.replace('_', '-')}"
        elif f.name == "cfg":
            cmd += f" --cfg '{json.dumps(v)}'"
        elif f.name in LISTS:
            cmd += f" {flag} {','.join(v)}"
        elif isinstance(v, str):
            cmd += f" {flag} {v}"
        else:
            cmd += f" {flag} {v:g}"
    return cmd


def add_recipe_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--recipe", default=None, help="a recipe file (recipes/<task>/<version>.json): take the step's "
                                                   "hyperparameters from it (the other options are ignored)")
    ap.add_argument("--step", default=None, help="with --recipe: the step's name (e.g. member1)")


def recipe_step(path: str, name: str | None) -> dict:
    """The step `name` of recipe file `path` (the only step when name is None)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    rec = json.load(open(path if os.path.isabs(path) or os.path.exists(path) else os.path.join(root, path)))
    steps = [s for s in rec["steps"] if name in (None, s["name"])]
    if len(steps) != 1:
        raise SystemExit(f"{path}: name one step with --step ({', '.join(s['name'] for s in rec['steps'])})")
    return steps[0]


def step_command(module: str, path: str, name: str) -> str:
    return f"python -m {module} --recipe {path} --step {name}"
