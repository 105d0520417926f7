"""The episode runner on a GPU: the scripted policy replaying the bundled solutions at full size.

Run through the device tool: ``pytest -m gpu tests/gpu/test_agent_gpu.py``.
"""

import pytest

from tritongym.agent.episodes import EpisodeConfig, EpisodeRunner
from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig
from tritongym.policy.scripted import ScriptedPolicy, replay_script
from tritongym.problems import load_bundled

pytestmark = pytest.mark.gpu


def test_fix_script_fails_then_passes_every_bundled_problem_at_full_size():
    problems = load_bundled()
    policy = ScriptedPolicy(problems, replay_script("fix"))
    with LocalEnv(PoolConfig(devices="cuda")) as env:
        runner = EpisodeRunner(policy, env, EpisodeConfig(turns=2), eval_config=EvalConfig(device="cuda", trials=3))
        episodes = runner.run(problems, samples=1)
    for episode in episodes:
        broken, fixed = episode.records
        assert broken.verdict == "compile_error", (episode.problem.name, broken.result["feedback"])
        assert "solution.py line" in fixed.messages[-1]["content"]
        assert fixed.verdict == "ok", (episode.problem.name, fixed.result["feedback"])
        assert fixed.result["speedup"] is not None and fixed.result["coverage"] >= 0.95
        assert fixed.reward > 0.5
