import pytest

from helpers import DEVICE
from tritongym.env import LocalEnv, PoolConfig


@pytest.fixture(scope="package")
def env():
    """One warm local pool for the integration tests (two sandboxes: the CPU has two cores in CI)."""
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=2)) as pool:
        yield pool
