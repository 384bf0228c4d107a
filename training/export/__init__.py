"""A trained network as a model folder: ONNX, streaming graphs, ensembles, prior shift, fusion."""
