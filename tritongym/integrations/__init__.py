"""Adapters for other RL frameworks: TRL (``integrations.trl``) and verl (``integrations.verl``).

The core never imports TRL or verl: each adapter module imports its framework lazily, inside the
functions that need it, and is installed with ``pip install 'tritongym[trl]'`` / ``'tritongym[verl]'``.
What both share (rebuilding a problem from dataset columns, scoring a batch of answers in input
order) lives in :mod:`tritongym.integrations.scoring`. See docs/integrations.md.
"""
