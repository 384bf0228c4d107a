"""The speaker recipe's card text (emotions 1.x, gender 1.3.0's member 3, the 2.x candidates): labels, sampling,
augmentation, splits and known limits, as rendered by cards/render.py."""
from __future__ import annotations

from training.data.channels import CODECS

LABELS = {
    "gender": "`gender` column (speaker-level) of every corpus that has one; adult speakers only (BAVED speakers under 18 "
              "left out); fsdd (6 male speakers, 8 kHz) left out as a bandwidth shortcut; ASED speakers whose label looked "
              "wrong have none in the csv.",
    "arousal": "`arousal` column: angry/fearful/happy/surprised -> high, sad/calm -> low, neutral -> neutral (RAVDESS, URDU, "
               "ASED, nEMO, ETTSDB); BAVED level2/1/0 -> high/neutral/low; RAVDESS disgust (`ambiguous`) left out.",
    "emotions": "Corpus emotion -> class: happy/happiness -> **happy**; angry/anger/disgust -> **irritated**; neutral/calm -> "
                "**neutral**; sad/sadness -> **tired**. Fear and surprise are left out: neither is one of the four classes, "
                "and mapping fear (tense, high arousal) to irritated would teach that any tense voice is irritated. BAVED "
                "(arousal levels, no emotion categories) and hyke (no emotion) take no part.",
}

SAMPLING = {
    "gender": "Balanced by speaker and emotion, not by clip: gender drawn uniformly, then corpus uniformly, then speaker "
              "uniformly, then one of the speaker's emotions uniformly, then clips of that speaker and emotion. Sad women "
              "and angry men are therefore as frequent as any other cell.",
    "arousal": "Class drawn uniformly, then corpus uniformly among those with the class, then speaker uniformly, then clips "
               "of that speaker and class.",
    "emotions": "Class drawn uniformly, then corpus uniformly among those with the class, then speaker uniformly, then clips "
                "of that speaker and class.",
}

AUGMENT = f"""Each labelled clip is kept in three recordings (`training/data/bank.py`, features cached under `training/cache/`):
- `clean`: as in the datasets folder (16 kHz Opus 24 kbit/s: codec artefacts are part of every example);
- `phone`: a telephone channel with a real codec through ffmpeg - 16 -> 8 kHz, handset band-pass (200-400 to 3200-3600 Hz),
  one of {', '.join(CODECS)} (spread evenly), 20 ms packet loss at 0-6 %, back to 16 kHz (`training/data/channels.py`);
- `noisy`: mixed with music or other sounds of the training split at 5-25 dB SNR, reverb (p=0.3), band-limiting (p=0.2).
Training examples (64 steps, 4.1 s) are drawn on the fly (`training/recipes/speaker.py`): a version per example (clean 0.4,
phone 0.3, noisy 0.3), 1-4 clips of the drawn speaker with short silences, each clip at a jittered level, then a global
gain of -30..+6 dB floored like the front end, and a frequency mask (p=0.5). Steps more than 30 dB below the clip's
active level get zero loss weight, so the silences that open and close acted clips teach nothing."""

SPLITS = """Held-out speakers (validation of the shipped model, `training/data/speakers.py` `split()`): RAVDESS actors 21-24,
the BAVED list of 1.x, URDU even-numbered speakers, nEMO speakers KD0 (f) and SM0 (m), and a fifth of the speakers of
hyke, ASED and ETTSDB (md5 of the speaker id). Leave-one-corpus-out (`training/validate/loco.py`) trains one model per corpus on
the training speakers of all the others and scores every clip of the held-out corpus."""

LANGUAGES = {"ravdess": "North-American English, acted", "baved": "Arabic, single words", "urdu": "Urdu, TV talk shows",
             "hyke": "Indian English, real phone calls", "ased": "Amharic, non-professional", "nemo": "Polish, acted",
             "ettsdb": "Korean, read/acted"}

LIMITS = {
    "gender": "- Perceived gender of the voice, not the speaker's identity; children and voices in between are often "
              "`unknown` (below the service's 0.65 threshold).\n"
              "- Decided from about 3 s of context: the first and last second of a speech segment are less sure.",
    "arousal": "- Acted corpora dominate; natural (URDU) arousal differs from acted arousal, and corpora disagree on what "
               "`neutral` sounds like.\n- The label is the clip's intended emotion, not a per-step rating.",
    "emotions": "- **Far from the target on recordings of a kind it never heard**: leave-one-corpus-out UAR 0.28-0.44 "
                "for the network alone (chance 0.25; target 0.55), 0.32-0.42 weighed by arousal 1.0.0 as shipped (mean "
                "about 0.38). On speakers of the corpora it was trained on it does better (held-out speakers UAR 0.55). Treat it as a coarse signal (`happy`/`irritated` against "
                "`neutral`), not a verdict on one utterance.\n"
                "- Acted corpora dominate (only URDU is natural speech); `happy` and `irritated` are both high-arousal and "
                "are confused most.\n- Four classes only: fear, surprise and mixed states fall into the nearest class.",
}


# the licence terms of the corpora with speaker labels and of the background music (one sentence for every card that uses them)
SPEAKER_LICENCES = ("Licences include non-commercial (CC BY-NC-SA: RAVDESS, nEMO, some jamendo songs), research-only (BAVED, "
                    "URDU, ETTSDB: no commercial use) and unstated (hyke: research data; ASED: \"freely available\") terms: "
                    "check them before any commercial use of these weights.")

ADDED_MEMBER = {
    "gender": "Member 3 (new in 1.3.0; `python -m training.recipes.speaker --task gender --embed-steps 4000 --variants "
              "0.35 --cfg '{\"lifter\": 0}'`, added by `python -m training.export.ensemble add --weight-new 0.5`) is trained in "
              "two stages (`training/recipes/embed_pretrain.py`). First its trunk learns the speaker encoder's view of a voice: it "
              "regresses the 256-d d-vector that Resemblyzer 0.1.4 (Apache-2.0, training time only; `training/data/teachers.py`) "
              "gives each clip, from the clip's clean, telephone and noisy recordings alike, over the labelled training "
              "speakers and the unlabelled VoxLingua107 and KDE word-list speech, plus WORLD variants of the training "
              "speakers' clips with the pitch moved across the other gender's range and the spectral envelope kept, which "
              "must land on their original clip's d-vector (so moving the pitch must not move the voice). Then, with the "
              "trunk frozen, only its per-step head learns female/male from our labels. The encoder was trained by its "
              "authors on thousands of speakers, and a linear probe on its d-vectors holds on corpora it never saw where "
              "our label-trained networks do not; the member inherits part of that (and of the encoder's weaknesses: "
              "emotional men of ASED), so it is fused with 1.2.0's two members rather than replacing them. It weighs as "
              "much as the two of them together (half of the fused log-probability). Equal thirds were scored too "
              "(pooled clean 0.923, telephone 0.872, low-arousal women 0.725, angry men 0.927); the half weight was "
              "chosen between these two on the figures below, which makes them slightly optimistic.",
}
