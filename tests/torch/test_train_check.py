"""The training check of docs/compression.md (bench/torch/train_check.py)
as a test: 3 ranks train the same model for 100 steps exact and with
MCCL_COLL_COMPRESS=bound (1e-3, about 4e-2 of the gradients' standard
deviation); the compressed run's final loss lies within 1% of the exact
run's, and it did compress. Deterministic: the same seeds, the same sums.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "torch"))
import train_check  # noqa: E402

if __name__ == "__main__":
    sys.argv = [sys.argv[0], "--ranks", "3", "--steps", "100", "--bound", "1e-3",
                "--deadline", "200"]
    sys.exit(train_check.main())
