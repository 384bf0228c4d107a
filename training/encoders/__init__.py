"""Pretrained encoders that run inside the service (exported to ONNX under models/encoders/),
their golden checks against the encoders' own Python code, and the heads we train on their
embeddings. See training/encoders/README.md."""
