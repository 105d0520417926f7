"""The one exception hierarchy of tritongym.

These are errors of the *caller* (a missing file, a malformed dataset, a bad option) or of the
infrastructure. A candidate's failures are never exceptions: they are verdicts in an EvalResult.
"""


class TritonGymError(Exception):
    """Base class: every error tritongym raises on purpose derives from it."""


class ProblemError(TritonGymError):
    """A problem could not be loaded or is malformed (say which file or row, and why)."""


class ConfigError(TritonGymError):
    """An option or configuration value is invalid."""


class SandboxError(TritonGymError):
    """The sandbox process could not be started or spoke outside its protocol."""


class ServiceError(TritonGymError):
    """The evaluation service failed to answer for a task (a server error for that task alone)."""
