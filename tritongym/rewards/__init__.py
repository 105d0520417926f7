"""Rewards: pure functions of an evaluation outcome and/or the model's text."""

from tritongym.rewards.compose import weighted_sum
from tritongym.rewards.text import (
    FormatReward,
    KernelCoderFormatReward,
    KernelCoderReward,
    code_blocks,
    extract_code,
    similarity_reward,
)
from tritongym.rewards.verifiable import TieredReward, VerifiableReward

__all__ = [
    "FormatReward",
    "KernelCoderFormatReward",
    "KernelCoderReward",
    "TieredReward",
    "VerifiableReward",
    "code_blocks",
    "extract_code",
    "similarity_reward",
    "weighted_sum",
]
