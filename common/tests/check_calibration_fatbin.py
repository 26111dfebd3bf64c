#!/usr/bin/env python3
"""Checks a calibration fatbinary (common/calibration_fatbin.cmake) without a GPU or cuobjdump (the toolkit's
compiler packages lack it): for every architecture given, a SASS image (ELF) holding both calibration kernels,
and the PTX of the newest, holding both, for GPUs newer than all of them to JIT-compile.

    check_calibration_fatbin.py FATBIN ARCH [ARCH...]

The container, as nvcc 12-13 write it: a 16-byte header (magic 0xBA55ED50, version, header size, size of what
follows), then images, each a header (kind: 1 PTX, 2 ELF; its size; the payload size; the architecture at byte
28; when compressed, its compressed size at byte 16) and its payload. PTX payloads are zstd-compressed by default; `zstd` decompresses them here."""
import shutil
import struct
import subprocess
import sys

KERNELS = ("rooflab_calib_copy_vec4_kernel", "rooflab_calib_fma_peak_kernel")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def images(data):
    magic, _version, header, size = struct.unpack_from("<IHHQ", data, 0)
    if magic != 0xBA55ED50:
        raise ValueError(f"not a fatbinary (magic {magic:#x})")
    at, end = header, header + size
    while at < end:
        kind, _flags, entry_header, payload = struct.unpack_from("<HHIQ", data, at)
        # A compressed image's own size is at byte 16; the payload after it is padding.
        packed, _ = struct.unpack_from("<II", data, at + 16)
        arch = struct.unpack_from("<I", data, at + 28)[0]
        body = data[at + entry_header:at + entry_header + payload]
        yield kind, arch, body[:packed] if body.startswith(ZSTD_MAGIC) and 0 < packed <= payload else body
        at += entry_header + payload


def ptx_text(payload):
    if not payload.startswith(ZSTD_MAGIC):
        return payload
    if shutil.which("zstd") is None:
        return None
    return subprocess.run(["zstd", "-dcq"], input=payload, stdout=subprocess.PIPE, check=True).stdout


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    archs = sorted({int(a.split("-")[0]) for a in sys.argv[2:]})
    found = list(images(open(sys.argv[1], "rb").read()))
    problems = []
    for arch in archs:
        elves = [p for kind, a, p in found if kind == 2 and a == arch]
        if not elves:
            problems.append(f"no SASS for sm_{arch}")
        for name in KERNELS:
            if elves and not any(b"\0" + name.encode() + b"\0" in p for p in elves):
                problems.append(f"sm_{arch}'s SASS lacks {name}")
    ptx = [p for kind, a, p in found if kind == 1 and a == archs[-1]]
    if not ptx:
        problems.append(f"no PTX for compute_{archs[-1]} (the newest)")
    else:
        text = ptx_text(ptx[0])
        if text is None:
            print(f"note: PTX of compute_{archs[-1]} present; its kernels not checked (no zstd to decompress it)")
        for name in KERNELS if text is not None else ():
            if f".entry {name}(".encode() not in text:
                problems.append(f"the PTX of compute_{archs[-1]} lacks {name}")
    for problem in problems:
        print(f"FAIL: {sys.argv[1]}: {problem}")
    listed = ", ".join(f"{'PTX' if k == 1 else 'sm'}_{a}" for k, a, _ in found)
    print(f"{sys.argv[1]}: images {listed}; want SASS of sm_{', sm_'.join(map(str, archs))} and PTX of the newest")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
