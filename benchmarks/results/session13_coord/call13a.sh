#!/usr/bin/env bash
# Coordinator call 1 of session 13: main at 1019097 (session 12's end). The bundled set at full size beside the
# honest corpus on CUDA (the 61 cases not judged after red teams 19/20 first), then one evaluate outside a pool.
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1 CC=/opt/gcc/bin/gcc
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
q() { grep -v -e UserWarning -e _warn_once; }
el "bundled full size + honest corpus"
timeout 470 python3 -m pytest -v -p no:cacheprovider -m gpu -n 3 --timeout 460 tests/gpu/test_gpu.py -k "full_size" > "$OUT/gpu_full_size.log" 2>&1 &
A=$!
timeout 450 python3 benchmarks/honest_corpus.py --device cuda --budget 1.0 --first helper_namespace heuristics host_final_sum imports_and_seed init_derived_weight kb_argmin_dim kb_batchnorm_eval kb_bmm kb_conv_bn_eval kb_conv_epilogue kb_cross_entropy kb_cumprod_scan kb_cumsum kb_depthwise_conv kb_direct_conv kb_dropout_functional kb_flash_attention kb_gelu_erf kb_gelu_tanh kb_gemm_autotune kb_groupnorm kb_hinge kb_huber_atomic kb_instancenorm kb_kl_div kb_linear_dropout_softmax kb_log_softmax kb_masked_cumsum kb_matmul_transposed kb_maxpool kb_mlp_sequential kb_reduce_dim kb_tensor_matmul_loop kb_triplet kept_state kernelbook_entry kernelbook_inductor_cpu lambda_grid libdevice_attribute_chain libdevice_math linear_subclass math_constants multi_kernel nested_kernels output_cache_class_attribute output_cache_lru output_workspace_object output_workspace_view padded_output_view permute_min_indices problems roll_int_arg split_k_accumulate static_range strides tensor_descriptor tl_math torch_part tutorial_device_driver tutorial_device_is_available whole_file --deadline 420 --out "$OUT/honest_1019097.jsonl" 2>&1 | q | grep -v "^ok " | tail -30
wait $A
grep -E "PASSED|FAILED|ERROR|XFAIL|XPASS| passed| failed" "$OUT/gpu_full_size.log" | sed 's/^\[gw[0-9]*\] //' | cut -c1-170
el "single evaluate"
timeout $(( 565 - ($(date +%s) - T0) )) python3 build/coord/single_eval_4x.py 2>&1 | q | tail -4
el done
