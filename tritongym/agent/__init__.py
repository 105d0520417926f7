"""Prompts, answer extraction, feedback rendering, multi-turn episodes and their trajectory records."""
