"""The clip table and everything made from audio (see training/README.md's map)."""
