#!/usr/bin/env python3
"""Fetch nvdisasm, which this toolkit lacks, from NVIDIA's wheel on PyPI, for the performance model's SASS.

    fetch_nvdisasm.py DEST      -> DEST/nvdisasm, DEST/STAMP; prints DEST/nvdisasm

A full CUDA toolkit has nvdisasm beside nvcc; the toolkit CI builds with has none, so the prediction would read
PTX. Only the one executable is read out of the wheel (HTTP range requests, as cmake/cuda12/fetch_headers.py
does for headers). Cached: with DEST/STAMP present nothing is downloaded. Exit code 77 (CTest: skipped) with the
reason when PyPI cannot be reached.
"""
import io
import os
import shutil
import stat
import sys
import urllib.error
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cuda12"))
from fetch_headers import RangeFile, wheel_url  # noqa: E402  (one reader of wheels for both)

PACKAGE, VERSION, MEMBER = "nvidia-cuda-nvdisasm", "13.2.86", "nvidia/cu13/bin/nvdisasm"
STAMP = f"{PACKAGE}=={VERSION}"


def main():
    dest = sys.argv[1]
    tool = os.path.join(dest, "nvdisasm")
    stamp = os.path.join(dest, "STAMP")
    if os.path.exists(stamp) and open(stamp).read().strip() == STAMP and os.access(tool, os.X_OK):
        print(tool)
        return 0
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        url = wheel_url(PACKAGE, VERSION)
        with zipfile.ZipFile(io.BufferedReader(RangeFile(url), buffer_size=1 << 20)) as z:
            with z.open(MEMBER) as src, open(os.path.join(tmp, "nvdisasm"), "wb") as dst:
                shutil.copyfileobj(src, dst)
    except (urllib.error.URLError, OSError, TimeoutError, KeyError, RuntimeError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"SKIPPED: nvdisasm cannot be fetched from PyPI ({e})", file=sys.stderr)
        return 77
    os.chmod(os.path.join(tmp, "nvdisasm"), stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    with open(os.path.join(tmp, "STAMP"), "w") as f:
        f.write(STAMP + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    print(os.path.join(dest, "nvdisasm"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
