"""Attack (one candidate stalls a whole trainer batch through the HTTP service): forward raises an
exception whose message holds lone UTF-16 surrogates. The feedback quotes it, the judge and the pool
carry it through JSON escapes, and the EvalResult holds a str that cannot be UTF-8 encoded.
FastAPI's JSONResponse encodes with ensure_ascii=False: GET /v1/tasks/{id} and every
POST /v1/tasks/query that includes this task answer 500. HttpEnv polls all its pending ids in one
query and retries on error forever, so every pending result of the client is stuck behind this one.
Anything else that encodes the feedback (a tokenizer, a UTF-8 log) raises too."""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):  # defined, never launched: the case is the exception
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        raise RuntimeError("bad \ud800 " + "\udfff" * 10)
