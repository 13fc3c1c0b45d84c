#!/usr/bin/env python3
"""Writes the .ckpt fixtures of tests/checkpoint_import_test.py into tests/models/checkpoint:

  sd15_small_ldm.ckpt   torch.save of the tensors of sd15_small_ldm.safetensors as an LDM checkpoint is laid
                        out ({"state_dict": OrderedDict, "global_step": int}); needs torch, else it is skipped.
  hostile/*.ckpt        torch-style zips whose data.pkl must be refused without running anything: a REDUCE of
                        os.system (GLOBAL and STACK_GLOBAL spellings), builtins.eval, a tensor larger than its
                        storage, a storage missing from the archive, a truncated archive, a compressed entry.
                        Written with the standard library only (pickle opcodes by hand).

Usage: .venv/bin/python scripts/make_ckpt_fixtures.py
"""
import io
import os
import struct
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "models", "checkpoint")


def torch_zip(path, pkl, storages=None, compress=False):
    """A zip laid out as torch.save writes it: archive/data.pkl, archive/data/<key>, archive/version."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr("archive/data.pkl", pkl)
        for key, raw in (storages or {}).items():
            z.writestr(f"archive/data/{key}", raw)
        z.writestr("archive/version", b"3\n")


def unicode(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def tensor_pkl(numel_claimed, key="0", storage="FloatStorage"):
    """{'w': tensor of shape [numel_claimed] on storage <key>}, as torch's _rebuild_tensor_v2 pickles it."""
    pid = b"(" + unicode("storage") + b"ctorch\n" + storage.encode() + b"\n" + unicode(key) + unicode("cpu") + \
        b"K\x04tQ"
    args = b"(" + pid + b"K\x00" + b"J" + struct.pack("<i", numel_claimed) + b"\x85" + b"K\x01\x85" + b"\x89" + \
        b"ccollections\nOrderedDict\n)Rt"
    return b"\x80\x02}(" + unicode("w") + b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"Ru."


def hostile():
    d = os.path.join(OUT, "hostile")
    os.makedirs(d, exist_ok=True)
    four = struct.pack("<4f", 1, 2, 3, 4)
    cases = {
        "os-system-reduce.ckpt": (b"\x80\x02cos\nsystem\n" + unicode("touch O2G_PWNED") + b"\x85R.", {}),
        "stack-global-posix-system.ckpt": (b"\x80\x04" + b"\x8c\x05posix\x8c\x06system\x93" +
                                           unicode("touch O2G_PWNED") + b"\x85R.", {}),
        "builtins-eval.ckpt": (b"\x80\x02cbuiltins\neval\n" + unicode("__import__('os')") + b"\x85R.", {}),
        "tensor-past-its-storage.ckpt": (tensor_pkl(1 << 30), {"0": four}),
        "storage-not-in-archive.ckpt": (tensor_pkl(4, key="7"), {"0": four}),
    }
    for name, (pkl, storages) in cases.items():
        torch_zip(os.path.join(d, name), pkl, storages)
    torch_zip(os.path.join(d, "compressed-entry.ckpt"), tensor_pkl(4), {"0": four}, compress=True)
    good = io.BytesIO()
    torch_zip(good, tensor_pkl(4), {"0": four})
    with open(os.path.join(d, "truncated-archive.ckpt"), "wb") as f:
        f.write(good.getvalue()[: len(good.getvalue()) * 2 // 3])
    with open(os.path.join(d, "good-four-floats.ckpt"), "wb") as f:  # the control: must load
        f.write(good.getvalue())
    print(f"hostile fixtures in {d}: {len(os.listdir(d))} files")


def twin():
    try:
        import collections
        import torch
        from safetensors.torch import load_file
    except ImportError as e:
        print(f"skipped sd15_small_ldm.ckpt ({e}; needs torch and safetensors)")
        return
    sd = load_file(os.path.join(OUT, "sd15_small_ldm.safetensors"))
    torch.save({"state_dict": collections.OrderedDict(sorted(sd.items())), "global_step": 1},
               os.path.join(OUT, "sd15_small_ldm.ckpt"))
    print(f"wrote {os.path.join(OUT, 'sd15_small_ldm.ckpt')} ({len(sd)} tensors)")


if __name__ == "__main__":
    hostile()
    twin()
    sys.exit(0)
