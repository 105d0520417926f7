import threading
import time

import torch.nn as nn

threading.Thread(target=time.sleep, args=(600,), daemon=True, name="lingering").start()


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a + b
