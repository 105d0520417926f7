"""Solutions made by tools rather than written: ``inductor`` turns torch.compile's generated code into
standalone Triton ``ModelNew`` files (``tritongym solutions inductor``)."""

from tritongym.solutions.inductor import Outcome, generate
from tritongym.solutions.output_code import Capture, Unsupported, render, standalone

__all__ = ["Capture", "Outcome", "Unsupported", "generate", "render", "standalone"]
