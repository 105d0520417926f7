"""tritongym: an environment, RL algorithms and a benchmark for LLM-written Triton kernels."""

__version__ = "0.1.0"
