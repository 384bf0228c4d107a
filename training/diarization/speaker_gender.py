"""Each speaker's gender in the speaker map's summary (src/speakers/speaker-gender.ts), scored on the simulated
conversations (embed.py's cache) with the gender head fitted leave one corpus out.

The rule (the service's): a file's speech windows (the clustered ones) each go to the speaker whose centroid is
closest (cosine of the centred windows, ties to the lower number); a stream's windows keep the speaker they were given.
A speaker's mean embedding (unit windows, not centred) goes through gender's head on the speaker map's encoder
(since gender 2.3 its "speaker_heads" entry on the full-band float CAM++; 2.2 read its view's head on CAM++'s int8
copy, the same space): P(male) = sigmoid(w . mean + b), the mean of its windows' log-odds.

Scored per speaker found: the truth is the gender of the reference voice that speaks most of its speech steps;
speakers of the label audit's doubted voices (models/gender/label_audit.json) are left out. The head never saw the
conversation's corpus (training/encoders/gender.py fit_head on the other corpora of its cache).

  python -m training diarization speaker_gender          # -> models/speakers/speaker_gender.json, prints the table
"""
from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

import numpy as np

from training.diarization import cluster as C
from training.diarization import simulate as S
from training.diarization import validate as V
from training.encoders import gender as G

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "models/speakers/speaker_gender.json"
AUDIT = ROOT / "models/gender/label_audit.json"


def file_assignment(res: dict) -> np.ndarray:
    """Speaker of each clustered window (indexes into res["clustered"]): the closest centroid, ties to the lower."""
    cents, Ea = res["centroids"], res["centred"]
    if len(cents) <= 1:
        return np.zeros(len(res["clustered"]), dtype=int)
    return np.array([int(np.argmax(C.dots(cents, Ea[i]))) for i in res["clustered"]], dtype=int)


def speaker_log_odds(E: np.ndarray, assign: np.ndarray, K: int, coef: np.ndarray, bias: float) -> list[float | None]:
    """Per speaker 0..K-1: the head's log-odds of male on the mean of its windows' unit embeddings (None: no window)."""
    out: list[float | None] = []
    for k in range(K):
        rows = E[assign == k]
        out.append(float(C.mean_rows(rows) @ coef + bias) if len(rows) else None)
    return out


def reference_owner(rec: dict) -> tuple[np.ndarray, np.ndarray]:
    """The voice speaking at each step and how many voices do (overlaps: > 1)."""
    n = len(rec["levels"])
    owner = np.full(n, None, dtype=object)
    count = np.zeros(n, dtype=int)
    for spk, a, b in rec["turns"]:
        for s in range(int(a / C.STEP_S), min(n, int(np.ceil(b / C.STEP_S)))):
            count[s] += 1
            owner[s] = spk
    return owner, count


def score_conversation(rec: dict, p: C.Params, head, genders: dict, doubted: frozenset) -> list[dict]:
    win, E = V.windows(rec, p)
    n = len(rec["levels"])
    owner, count = reference_owner(rec)
    sp = np.asarray(rec["speech"][:n]).astype(bool)
    rows = []
    res = C.file_map(n, win, E, p, None, speech=rec["speech"])
    z_file = speaker_log_odds(res["embeddings"][res["clustered"]], file_assignment(res), res["K"], *head)
    # a stream's speakers (compared whitened since 1.4.0) each read on the plain windows they were given, as live-map.ts does
    En = C.normalise(np.asarray(E, dtype=np.float64))
    o = C.stream_map(n, win, E, p)
    ids = o["assigned"]
    modes = [("file", res["labels"], z_file),
             ("online", o["labels"], speaker_log_odds(En, ids, int(ids.max()) + 1 if len(ids) else 0, *head))]
    k = rec["meta"]["speakers"]
    if k <= p.recluster_max_speakers:  # a stream told the count: its recent windows re-clustered (recluster_assign)
        ok = C.stream_map(n, win, E, p, num_speakers=k)
        modes.append(("online_count_given", ok["labels"], speaker_log_odds(En, ok["assigned"], k, *head)))
    for mode, labels, zs in modes:
        for k, z in enumerate(zs):
            steps = np.nonzero((labels == k) & sp & (count == 1))[0]
            if z is None or len(steps) == 0:
                continue
            voice, owned = collections.Counter(owner[s] for s in steps).most_common(1)[0]
            true_voice = rec["meta"]["voices"][voice]
            if true_voice not in genders or true_voice in doubted:
                continue
            rows.append({"mode": mode, "corpus": rec["meta"]["corpus"], "condition": rec["meta"]["condition"],
                         "speakers": rec["meta"]["speakers"], "truth": genders[true_voice], "p_male": 1 / (1 + np.exp(-z)),
                         "purity": owned / len(steps)})
    return rows


def accuracy(rows: list[dict]) -> dict:
    ok = [(r["p_male"] >= 0.5) == (r["truth"] == "male") for r in rows]
    return {"speakers": len(rows), "accuracy": round(float(np.mean(ok)), 3) if ok else None}


def report(rows: list[dict]) -> dict:
    out = {}
    for mode in ("file", "online", "online_count_given"):
        m = [r for r in rows if r["mode"] == mode]
        held = [r for r in m if r["corpus"] in S.TEST]
        out[mode] = {
            "held_out": accuracy(held),
            "tuning": accuracy([r for r in m if r["corpus"] in S.DEV]),
            "held_out_by_condition": {c: accuracy([r for r in held if r["condition"] == c]) for c in S.CONDITIONS},
            "by_corpus": {c: accuracy([r for r in m if r["corpus"] == c]) for c in sorted({r["corpus"] for r in m})},
            "held_out_pure_speakers": accuracy([r for r in held if r["purity"] >= 0.8]),
            "held_out_sure_0.8": {"share": round(float(np.mean([max(r["p_male"], 1 - r["p_male"]) >= 0.8 for r in held])), 3),
                                  **accuracy([r for r in held if max(r["p_male"], 1 - r["p_male"]) >= 0.8])},
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()
    p = C.Params.from_manifest()
    # the gender head the service applies (src/speakers/speaker-gender.ts): gender's speaker head on the map's encoder
    # (2.3), else its view of that encoder or of an int8 copy (2.2), fitted on that key of the gender cache; the map's
    # windows are embedded as cached
    encoder = json.load(open(C.MANIFEST))["encoder"]
    gender_views = json.load(open(G.MANIFEST))["views"]
    speaker_heads = [h["encoder"] for h in gender_views.get("speaker_heads", [])]
    views = [v["encoder"] for v in gender_views["encoders"]]
    quantised_from = {n: json.load(open(ROOT / "models/encoders" / n / "manifest.json")).get("quantised_from") for n in views}
    named = ([n for n in speaker_heads if n == encoder] or [n for n in views if n == encoder]
             or [n for n in views if quantised_from[n] == encoder])
    key = {name: k for k, name in G.ENCODER_OF_KEY.items()}[named[0]]
    recs_g = G.load()
    doubted = frozenset(json.load(open(AUDIT))["suspect"])
    genders = {r["speaker"]: r["gender"] for r in recs_g}
    heads: dict[str, tuple] = {}
    rows = []
    for rec in V.load(list(S.DEV) + list(S.TEST)):
        corpus = rec["meta"]["corpus"]
        if corpus not in heads:  # the head never saw this corpus
            heads[corpus] = G.fit_head([r for r in recs_g if r["source"] != corpus and G.fitted_on(r, doubted)], key)
        rows += score_conversation(rec, p, heads[corpus], genders, doubted)
    out = {"rule": __doc__.split("\n\n")[1].replace("\n", " "), "conversations": "training/diarization/simulate.py, oracle speech",
           **report(rows)}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
