"""Forward's copies of device memory to the host, counted as a GPU's runner counts them
(placement.HostReads; red team 14 #2). On a GPU a tensor is device memory where PyTorch says so; the
CPU has no CUDA tensor, so these tests give the decision (``host_read_bytes``) and the mode a device
predicate of their own: the tensors over ``x``'s storage are "device memory", every other tensor host
memory, and a device names the host as on a GPU (``on_host``)."""

from __future__ import annotations

import pytest
import torch
import triton

from tritongym.evaluate.placement import HostReads, HostTensors, host_read_bytes, launch_pointers, on_host

x = torch.arange(64, dtype=torch.float32)
"""The "device" tensor (256 bytes)."""


def made(t: torch.Tensor) -> str:
    """Host memory but ``x``'s storage: a GPU's view of these tests' tensors."""
    return "" if t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() else "host memory"


def names_host(device: object) -> bool:
    """A GPU's: a tensor names the host where it is host memory, any other device as ``on_host`` says."""
    return bool(made(device)) if isinstance(device, torch.Tensor) else on_host(device)


def gpu(func, *args, own: bool = False, **kwargs) -> int:
    return host_read_bytes(func, args, kwargs, made, own, names_host)


def test_on_a_gpu_a_device_is_the_host_however_it_is_named():
    host = torch.zeros(1)
    for device in ["cpu", "cpu:0", "".join(["c", "pu"]), "CPU".lower(), torch.device("cpu"), host]:
        assert on_host(device), device
    for device in ["cuda", "cuda:1", torch.device("cuda", 0), torch.device("meta"), torch.float64, None, 0, "a lie"]:
        assert not on_host(device), device


def test_every_copy_of_device_memory_to_the_host_is_counted_given_the_device():
    """What a GPU copies to the host: reads of values, copies named by any spelling of the host, a
    copy or an assignment into host memory, tensors made of the data on the host, legacy host types,
    a storage handed to forward's code."""
    h = torch.empty(64)
    nbytes = x.nbytes
    assert gpu(torch.Tensor.tolist, x) == nbytes
    assert gpu(torch.Tensor.item, x[:1]) == 4
    assert gpu(torch.Tensor.__format__, x, "") == nbytes
    assert gpu(torch.Tensor.numpy, x, force=True) == nbytes
    assert gpu(torch.Tensor.cpu, x) == nbytes
    assert gpu(torch.Tensor.to, x, "cpu") == nbytes
    assert gpu(torch.Tensor.to, x, torch.device("cpu")) == nbytes
    assert gpu(torch.Tensor.to, x, device=torch.device("cpu")) == nbytes
    assert gpu(torch.Tensor.to, x, h) == nbytes  # to a host tensor's device
    assert gpu(torch.Tensor.copy_, h, x) == nbytes
    assert gpu(torch.Tensor.__setitem__, h, slice(None), x) == nbytes
    assert gpu(torch.as_tensor, x, device=torch.device("cpu")) == nbytes
    assert gpu(torch.as_tensor, x, None, "cpu") == nbytes
    assert gpu(torch.tensor, x, device="cpu") == nbytes
    assert gpu(torch.asarray, x, device="cpu") == nbytes
    assert gpu(torch.Tensor.new_tensor, h, x) == nbytes  # on the host tensor's device
    assert gpu(torch.tensor, [x[0], x[1]]) == 8  # each element read on the host, wherever the result goes
    assert gpu(torch.as_tensor, [[x[0]], (x[1], x[2])], device="cuda") == 12
    assert gpu(torch.Tensor.new_tensor, x, [x[0], x[1]]) == 8
    assert gpu(torch.Tensor.type, x, torch.FloatTensor) == nbytes
    assert gpu(torch.Tensor.type, x, "torch.DoubleTensor") == nbytes
    assert gpu(torch.Tensor.untyped_storage, x) == nbytes


def test_what_stays_on_the_device_or_was_on_the_host_is_not_counted():
    h = torch.empty(64)
    assert gpu(torch.Tensor.to, x, torch.float64) == 0  # a cast keeps the device
    assert gpu(torch.Tensor.to, x, "cuda") == 0
    assert gpu(torch.Tensor.to, x, x) == 0
    assert gpu(torch.Tensor.copy_, x, h) == 0  # host to device
    assert gpu(torch.Tensor.__setitem__, x, slice(None), h) == 0
    assert gpu(torch.Tensor.__setitem__, h, 0, 1.0) == 0
    assert gpu(torch.as_tensor, x) == 0  # on the data's device
    assert gpu(torch.tensor, x, device="cuda") == 0
    assert gpu(torch.tensor, [1.0, 2.0], device="cpu") == gpu(torch.tensor, [[1, 2], [3]]) == 0  # Python's numbers
    assert gpu(torch.tensor, [h[0], h[1]]) == 0
    assert gpu(torch.Tensor.new_tensor, x, x) == 0
    assert gpu(torch.Tensor.new_tensor, h, x, device="cuda") == 0
    assert gpu(torch.Tensor.type, x, "torch.cuda.FloatTensor") == 0
    assert gpu(torch.Tensor.type, x, torch.float64) == 0
    assert gpu(torch.Tensor.untyped_storage, x, own=True) == 0  # Triton's or the judge's request
    assert gpu(torch.empty_like, x, device="cpu") == 0  # its sizes only
    for read in (torch.Tensor.tolist, torch.Tensor.cpu, torch.Tensor.untyped_storage, torch.Tensor.__repr__):
        assert gpu(read, h) == 0  # host memory read on the host
    assert gpu(torch.Tensor.size, x) == gpu(torch.Tensor.data_ptr, x) == 0


def test_the_cpus_rule_names_the_host_by_the_literal_only():
    """On the CPU ``torch.device("cpu")`` and a tensor's device are the judge's device memory too: the
    CPU's rule (the decision's default) names the host by the literal only, as its marks do."""
    assert host_read_bytes(torch.Tensor.to, (x, torch.device("cpu")), {}, made) == 0
    assert host_read_bytes(torch.Tensor.to, (x, "cpu"), {}, made) == x.nbytes


class Reads(HostReads):
    """A GPU's count with these tests' device predicate."""

    def made(self, t: torch.Tensor) -> str:
        return made(t)


@pytest.mark.parametrize(
    ("name", "read", "expected"),
    [
        ("tolist", lambda: x.tolist(), 256),
        ("item", lambda: x[3].item(), 4),
        ("float", lambda: float(x[3]), 4 * 1),
        ("repr", lambda: repr(x), 256),
        ("to_device_object", lambda: x.to(torch.device("cpu")), 256),
        ("assigned", lambda: torch.empty(64).__setitem__(slice(None), x), 256),
        ("storage", lambda: x.untyped_storage().tolist(), 256),
        ("typed_storage", lambda: x.storage(), 256),  # asks for the untyped one inside: counted once
        ("shape", lambda: (x.shape, x.stride(), x.data_ptr(), x + 1), 0),
    ],
)
def test_the_mode_counts_each_read_once_outside_other_calls(name, read, expected):
    reads = Reads()
    with reads:
        read()
    assert reads.host_bytes == expected, name


def test_tritons_and_the_judges_requests_for_a_storage_are_not_forwards():
    """``OwnCode`` on a GPU too: the judge's look at a launch's pointers asks for no storage it counts;
    a function of the candidate's whose code names Triton's file is the candidate's."""

    def storage(t):
        return t.untyped_storage()

    storage.__code__ = storage.__code__.replace(co_filename=triton.jit.__code__.co_filename)
    reads = Reads()
    with reads:
        launch_pointers([("0", x)])
        assert reads.host_bytes == 0
        storage(x)
    assert reads.host_bytes == x.nbytes


def test_a_gpus_host_tensors_are_never_counted():
    """Without the tests' predicate (the CPU has no CUDA tensor) every tensor is host memory: a GPU's
    count of host tensors read on the host is 0, whoever made them."""
    reads = HostReads()
    with reads:
        x.tolist(), x.cpu(), float(x[0]), x.untyped_storage().tolist(), torch.empty(64).copy_(x)
    assert reads.host_bytes == 0


def test_the_cpus_count_is_the_same_decision():
    """HostTensors counts with its marks: what it did not mark is the device's (the same reads as
    ``Reads``, and the CPU's holes closed with the GPU's count: an assignment, ``as_tensor``)."""
    host = HostTensors()
    with host:
        buffer = torch.empty(64)
        buffer[:] = x
        assert host.host_bytes == x.nbytes
        torch.as_tensor(x, device="cpu")
        assert host.host_bytes == 2 * x.nbytes
        buffer.tolist(), buffer.copy_(buffer)
        assert host.host_bytes == 2 * x.nbytes
