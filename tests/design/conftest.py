import pytest


@pytest.fixture(scope="session")
def design_env(warm_env):
    """The design-language tests judge in the session's warm sandbox (a judge's start dominates their cost)."""
    return warm_env
