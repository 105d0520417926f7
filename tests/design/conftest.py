import pytest

from helpers import DEVICE
from tritongym.env.local import LocalEnv, PoolConfig


@pytest.fixture(scope="session")
def design_env():
    """One warm pool for every design-language test that evaluates (its start dominates their cost)."""
    env = LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=2))
    yield env
    env.close()
