"""The timing slots the judge shares with a runner are carved from one buffer (speed.carve_slots):
every slot has its leaf's shape and strides, a transposed input included, and no two overlap."""

import torch

from tritongym.evaluate.judge.speed import carve_slots, carved_bytes, slot_specs


def test_slots_of_every_layout_are_disjoint_and_shaped_like_their_leaves():
    inputs = [torch.randn(6, 5).t(), torch.randn(6, 10)[:, ::2], torch.arange(7, dtype=torch.int64)]
    outputs = (torch.randn(5, 6), torch.zeros(2, dtype=torch.float16))
    specs_in, specs_out = slot_specs(inputs, outputs, count=3)
    specs = specs_in + specs_out
    buffer = torch.zeros(carved_bytes(specs, 512), dtype=torch.uint8)
    slots = carve_slots(buffer, specs, 512)
    for slot, leaf in zip(slots[:3], inputs, strict=True):
        assert slot.shape == (3, *leaf.shape) and slot[1].stride() == leaf.stride() and slot.dtype == leaf.dtype
    for slot, leaf in zip(slots[3:], outputs, strict=True):
        assert slot.shape == (3, *leaf.shape) and slot[2].is_contiguous() and slot.dtype == leaf.dtype
    owner = torch.full((buffer.numel(),), -1)  # which slot element wrote each byte
    for n, slot in enumerate(slots):
        for k in range(3):
            for index in torch.cartesian_prod(*[torch.arange(s) for s in slot[k].shape]).reshape(-1, slot[k].dim()):
                element = slot[k][tuple(index.tolist())]
                start = element.data_ptr() - buffer.data_ptr()
                span = owner[start : start + element.element_size()]
                assert bool((span == -1).all()), f"slot {n} call {k} overlaps another element"
                span.fill_(n * 100 + k)
