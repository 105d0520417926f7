import pytest


@pytest.fixture(scope="package")
def env(warm_env):
    """The integration tests judge in the session's warm sandbox."""
    return warm_env
