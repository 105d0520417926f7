"""Text generation backends behind one protocol (see base.py)."""

from tritongym.policy.base import Completion, Message, Policy, SamplingConfig

__all__ = ["Completion", "Message", "Policy", "SamplingConfig"]
