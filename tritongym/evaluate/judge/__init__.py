"""Both sides of the trust boundary of one evaluation.

* The judge (judge.py, ``python -m tritongym.evaluate.judge``) is the warm per-device worker that
  the pool keeps. It never imports candidate code. It holds the problem, the reference model, the
  secret seeds and the inputs made from them, the float64 references, the comparisons, the guard
  bookkeeping, the timing of the reference and the verdict; it alone talks to the pool.
* A runner (runner.py) imports one candidate and only executes it: it receives inputs, returns
  outputs and reports what it saw. It is forked from a warm zygote (zygote.py: torch and Triton
  imported, CUDA not initialised), serves exactly one candidate and is killed. Nothing it says is
  taken on trust (see docs/environment.md, "Threat model").
* protocol.py is the only channel between them: length-prefixed frames of typed messages, tensors as
  raw bytes behind a fixed header, no pickle.
"""
