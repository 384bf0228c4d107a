"""python -m training {recipes, rebuild TASK [--quick], sources [TASK ...], diarization STEP ...}: see training/README.md."""
import argparse
import json
import os
import sys

from training import rebuild as R


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m training", description=R.__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("recipes", help="the shipped models and their recipe files")
    rb = sub.add_parser("rebuild", help="rebuild a shipped model from the datasets and check it against its manifest")
    rb.add_argument("task")
    rb.add_argument("--quick", action="store_true", help="smoke run: a small part of the clips, one short epoch per step")
    rb.add_argument("--work", default=None, help="work folder (default training/runs/rebuild[-quick]/TASK)")
    rb.add_argument("--threads", type=int, default=2)
    so = sub.add_parser("sources", help="what each shipped model was made from")
    so.add_argument("tasks", nargs="*")
    so.add_argument("--json", action="store_true")
    di = sub.add_parser("diarization", help="speaker map validation: embed | hold_music | whitening | tune | tune-merge | tune-free-recluster | report | golden | speaker_gender | service_speech (training/diarization/README.md)")
    di.add_argument("step", choices=["embed", "hold_music", "whitening", "tune", "tune-merge", "tune-free-recluster", "report", "golden",
                                        "speaker_gender", "service_speech"])
    di.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.cmd == "diarization":
        import importlib
        validated = a.step in ("tune", "tune-free-recluster", "report")
        module = "validate" if validated else {"tune-merge": "merge_rule"}.get(a.step, a.step)
        mod = importlib.import_module(f"training.diarization.{module}")
        sys.argv = [f"python -m training diarization {a.step}", *([a.step] if validated else []), *a.rest]
        mod.main()
    elif a.cmd == "recipes":
        for task, m in R.shipped().items():
            r = json.load(open(os.path.join(R.ROOT, m["training"]["recipe"])))
            print(f"{task} {m['version']}: {m['training']['recipe']}\n  {r['rebuild']}  (full run: {r.get('full_run', '?')})"
                  f"\n  {r['smoke']}  (smoke run: {r.get('smoke_run', '?')})")
    elif a.cmd == "rebuild":
        import torch
        torch.set_num_threads(a.threads)
        _, rows = R.rebuild(a.task, a.quick, a.work)
        sys.exit(0 if all(ok for _, ok, _ in rows) else 1)
    else:
        rep = R.sources(a.tasks)
        print(json.dumps(rep, indent=1)) if a.json else R.print_sources(rep)


main()
