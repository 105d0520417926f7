"""Red team 19 #9 (the ``torch.signal`` namesake allowance, red team 17): PyTorch's window functions are
allowed by their full path, though ``signal`` is a forbidden module. Through the namesake, its module
``torch.signal.windows.windows`` holds ``torch`` itself, and from there ``torch._C`` (the dispatch keys
that hide compute from the op recorder). The static checks look at every dotted path whole: refused."""

import torch.nn as nn
from torch import signal


class ModelNew(nn.Module):
    def forward(self, a, b):
        with signal.windows.windows.torch._C._ExcludeDispatchKeyGuard(
            signal.windows.windows.torch._C.DispatchKeySet(signal.windows.windows.torch._C.DispatchKey.Python)
        ):
            return a + b
