"""Many candidates on many devices behind one API: local pool, Ray backend, HTTP client."""

from tritongym.env.base import Env, Task, WorkerPool
from tritongym.env.local import LocalEnv, PoolConfig

__all__ = ["Env", "LocalEnv", "PoolConfig", "Task", "WorkerPool"]
