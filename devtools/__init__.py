"""Developer tools, not part of the served app: benchmarks, load tests and synthetic data (`python -m services bench|synth`)."""
