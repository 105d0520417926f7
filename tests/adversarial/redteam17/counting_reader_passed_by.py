"""Red team 17 #2: red team 16 #3's input storage (kept by ``copy.deepcopy``'s memo, no request of
forward's) read past the counting readers that closed it. Those readers are Python wrappers set on
``torch.UntypedStorage`` over methods it inherits from PyTorch's C class (``torch._C.StorageBase``,
an immutable type): ``ROUTE = "super"`` calls the C method itself (``super(torch.UntypedStorage,
host).copy_(storage)``); ``"closure"`` the wrapper's own original, from its closure; ``"write_file"``
the C ``_write_file`` into a file of the job's directory (``io.FileIO``), read back. The row sums are
assigned into the output after a probe kernel ran (the hollow forward skips every launch)."""

import copy
import io

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROUTE = "super"


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


def host_bytes(storage) -> bytes:
    if ROUTE == "write_file":
        with io.FileIO("storage.bin", "w+") as file:
            super(torch.UntypedStorage, storage)._write_file(file, True, True, 1)
            file.seek(8)  # past the size the legacy format writes first
            return file.read()
    host = torch.UntypedStorage(storage.nbytes())
    if ROUTE == "super":
        super(torch.UntypedStorage, host).copy_(storage)
    else:
        reader = torch.UntypedStorage.copy_
        original = next(c.cell_contents for c in reader.__closure__ if callable(c.cell_contents))
        original(host, storage)
    return bytes(torch.tensor([], dtype=torch.uint8).set_(host).numpy())


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, width = x.shape
        memo: dict = {}
        copy.deepcopy(x, memo)
        storage = next(s for s in memo[id(memo)] if isinstance(s, torch.UntypedStorage))
        data = host_bytes(storage)
        values = np.frombuffer(data, dtype=np.float32)[x.storage_offset() :]
        sums = values[: rows * width].reshape(rows, width).astype(np.float64).sum(axis=1)
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        flag_kernel[(1,)](flag)
        if int(flag.item()) == 1:  # not in the hollow forward
            out.copy_(torch.tensor(sums.tolist(), dtype=x.dtype))
        return out
