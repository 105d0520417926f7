#!/usr/bin/env bash
# Multi-turn training with verl on tritongym: the tritongym_kernel agent loop (answer, evaluation,
# feedback, up to 4 turns), turn-level leave-one-out advantages (TRLOO) and the dual-clip loss.
set -euo pipefail
MODEL=${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}
DATA=${DATA:-data/tritongym-mt}
export TRITONGYM_ENV=${TRITONGYM_ENV:-http://localhost:8000}
export VERL_USE_EXTERNAL_MODULES=tritongym.integrations.verl_plugin

python examples/verl/prepare_data.py --problems "${PROBLEMS:-bundled}" --out "$DATA" --multi-turn

python -m verl.trainer.main_ppo \
  data.train_files="$DATA/train.parquet" \
  data.val_files="$DATA/test.parquet" \
  data.train_batch_size=16 \
  data.max_prompt_length=4096 \
  data.max_response_length=16384 \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=4 \
  actor_rollout_ref.actor.ppo_mini_batch_size=16 \
  actor_rollout_ref.actor.policy_loss.loss_mode=tritongym_dual_clip \
  algorithm.adv_estimator=tritongym_trloo \
  algorithm.gamma=1.0 \
  reward.custom_reward_function.path=pkg://tritongym.integrations.verl \
  reward.custom_reward_function.name=compute_score \
  trainer.n_gpus_per_node="${GPUS:-8}" \
  trainer.nnodes=1 \
  trainer.total_epochs=10 \
  trainer.logger='["console"]' \
  "$@"
