"""Importing this module registers tritongym with verl (estimators, dual-clip loss, agent loop).

verl imports it in every one of its processes (driver, task runner, workers) when
``VERL_USE_EXTERNAL_MODULES=tritongym.integrations.verl_plugin`` is set: that is how
``algorithm.adv_estimator=tritongym_trloo`` and ``actor_rollout_ref.actor.policy_loss.loss_mode=
tritongym_dual_clip`` resolve wherever verl looks them up.
"""

from tritongym.integrations.verl import register_with_verl

REGISTERED = register_with_verl()
"""The names registered with verl."""
