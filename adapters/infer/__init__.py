"""Inference: sampled rows read for their layout (detect.py, the one schema detector, and the readings it weighs), a
trial of the detection on its own sample, and infer.py's proposal of a spec for a Hub dataset; field kinds and
accounting say where each raw field went."""
