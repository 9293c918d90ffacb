"""What every part of the core benchmark runs: one model, one dataset, two workers, two codecs."""

from __future__ import annotations

PIN = "424242"
WORKERS = 2
BATCH = 32
DATASET, MODEL = "mnist-sample", "simplenet"
CODECS = ("raw", "zstd")
NUMEL = 21840  # simplenet's parameters on 28x28 gray images
KB = 1000  # kB here are 1,000 bytes, as in the original computeShare figures

# The original computeShare, measured earlier on this machine and data (not rerunnable here).
ORIGINAL = {
    "round_s": 0.196, "overhead_s": 0.176, "round_paced_s": 1.196,
    "push_kb": 61, "model_kb": 463, "round_kb": 1049, "two_epochs_s": 155, "two_epochs_acc": 0.91,
}
