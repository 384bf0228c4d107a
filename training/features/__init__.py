"""The front end: a numpy reference of the service's log-mel features (docs/features.md), equal to the C++ addon
(golden-tested: `python -m training.features --golden test/fixtures/features_golden.json`, test/audio/golden.test.ts)."""
from training.features.logmel import *  # noqa: F401,F403 (the public names: logmel, logmel_fast, step_levels, ...)
