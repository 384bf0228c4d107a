"""The service's own speech decisions for every cached conversation, so that `validate.py report --service-speech`
scores the speaker map through them (the speakers card's "the service's speech" figures, since session 42).

Each planned conversation of the cache is simulated again (simulate.simulate: the same seeds, so the same audio the
cache was embedded from), written as a 16-bit WAV into a temporary folder and analysed by the built service, one
process per conversation: `node dist/src/cli/main.js analyze WAV --models speech --output-period 64
--volume-threshold DB`. Its per-step decisions ("1" where the result is `speech`, "0" else: silence under the
volume threshold, music, other) go to training/runs/diarization/service_speech<DB>/<key>.txt, one line; a
conversation already there is skipped, so an interrupted run goes on where it stopped.

  npm run build && python -m training diarization service_speech [--volume-threshold -60] [--corpora a,b] [--workers 2]
  # ~25 min on 2 cores for the 390 conversations; then: python -m training diarization report --service-speech -60
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import subprocess
import tempfile
from pathlib import Path

from training.diarization import simulate as S

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "dist/src/cli/main.js"


def folder(runs: Path, volume_threshold: float) -> Path:
    """Where the decisions at this volume threshold live (e.g. service_speech-60)."""
    return runs / f"service_speech{volume_threshold:g}"


def decisions(wav: Path, volume_threshold: float) -> str:
    """The service's speech decision per 64 ms step of `wav`: "1" speech, "0" anything else."""
    out = wav.with_suffix(".out.json")
    subprocess.run(["node", str(CLI), "analyze", str(wav), "--models", "speech", "--output-period", "64",
                    "--volume-threshold", f"{volume_threshold:g}", "--threads", "1", "--out", str(out)],
                   check=True, capture_output=True)
    steps = json.loads(out.read_text())["result"]["channels"]["0"]["time_series"]
    return "".join("1" if s["results"]["speech"]["result"] == "speech" else "0" for s in steps)


def _one(job: tuple[S.Conversation, str, float]) -> str:
    import soundfile as sf
    conv, out_dir, volume_threshold = job
    target = Path(out_dir) / f"{conv.key}.txt"
    if target.exists():
        return conv.key
    y, _turns, _meta = S.simulate(conv)
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / f"{conv.key}.wav"
        sf.write(str(wav), y, S.SR, subtype="PCM_16")
        flags = decisions(wav, volume_threshold)
    target.write_text(flags + "\n")
    return conv.key


def load_into(recs: list[dict], directory: Path) -> list[dict]:
    """`recs` (validate.load) with rec["speech"] the service's decisions from `directory` (steps past their end: not
    speech) and rec["oracle_speech"] the reference's; a conversation without its file is an error."""
    import numpy as np
    missing = [r["meta"]["key"] for r in recs if not (directory / f"{r['meta']['key']}.txt").exists()]
    if missing:
        raise SystemExit(f"{directory}: no service speech for {len(missing)} conversations (e.g. {missing[0]}); "
                         f"run python -m training diarization service_speech first")
    for r in recs:
        flags = (directory / f"{r['meta']['key']}.txt").read_text().strip()
        n = len(r["levels"])
        sp = np.zeros(n, dtype=bool)
        m = min(n, len(flags))
        sp[:m] = np.frombuffer(flags[:m].encode(), dtype=np.uint8) == ord("1")
        r["oracle_speech"], r["speech"] = r["speech"], sp
    return recs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--volume-threshold", type=float, default=-60.0, help="the request's volume_threshold (dBFS)")
    ap.add_argument("--corpora", default=",".join(S.CORPORA))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default=None, help="the folder with cache/ (default training/runs/diarization)")
    a = ap.parse_args()
    if not CLI.exists():
        raise SystemExit(f"{CLI} is missing: npm run build first")
    runs = Path(a.runs) if a.runs else S.RUNS
    out = folder(runs, a.volume_threshold)
    out.mkdir(parents=True, exist_ok=True)
    plan = S.plan(tuple(a.corpora.split(",")))
    jobs = [(c, str(out), a.volume_threshold) for c in plan]
    with multiprocessing.get_context("fork").Pool(a.workers) as pool:
        for i, key in enumerate(pool.imap_unordered(_one, jobs), 1):
            if i % 20 == 0 or i == len(jobs):
                print(f"  {i}/{len(jobs)} {key}", flush=True)
    print(f"wrote {out}: {len(jobs)} conversations")


if __name__ == "__main__":
    main()
