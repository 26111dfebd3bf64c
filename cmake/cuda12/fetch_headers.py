#!/usr/bin/env python3
"""Fetch the CUDA 12.4 toolkit headers the CUDA 12 compatibility check compiles against, from PyPI's wheels.

    fetch_headers.py DEST      -> DEST/include/{cuda_runtime.h, cublas_v2.h, crt/..., ...}, DEST/STAMP

Only the headers are read out of each wheel, with HTTP range requests on the wheel (a zip file): the cuBLAS
wheel is about 360 MB of libraries around 1 MB of headers. The result is cached: with DEST/STAMP present
nothing is downloaded. Exit code 77 (CTest: skipped) with the reason when PyPI cannot be reached.
"""
import io
import json
import os
import shutil
import sys
import urllib.error
import urllib.request
import zipfile

# (package, version, the wheel's include directory). 12.4 is the oldest toolkit rooflab supports.
WHEELS = [
    ("nvidia-cuda-runtime-cu12", "12.4.127", "nvidia/cuda_runtime/include/"),
    ("nvidia-cublas-cu12", "12.4.5.8", "nvidia/cublas/include/"),
    # cuda_runtime.h includes crt/host_config.h: in CUDA 12 the crt/ headers ship with the compiler.
    ("nvidia-cuda-nvcc-cu12", "12.4.131", "nvidia/cuda_nvcc/include/"),
]
STAMP = "cuda 12.4 headers: " + ", ".join(f"{p}=={v}" for p, v, _ in WHEELS)
TIMEOUT = 30


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file: each read is one HTTP range request."""

    def __init__(self, url):
        self.url, self.pos = url, 0
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=TIMEOUT) as r:
            self.size = int(r.headers["Content-Length"])

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=0):
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def readinto(self, buffer):
        end = min(self.pos + len(buffer), self.size)
        if end <= self.pos:
            return 0
        req = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end - 1}"})
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            data = r.read()
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


def wheel_url(package, version):
    # The simple index (PEP 691, JSON form): what pip itself reads.
    req = urllib.request.Request(f"https://pypi.org/simple/{package}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        files = json.load(r)["files"]
    for f in files:
        name = f["filename"]
        if name.startswith(package.replace("-", "_") + "-" + version + "-") and name.endswith(".whl") \
                and "manylinux" in name and "x86_64" in name:
            return f["url"]
    raise RuntimeError(f"{package}=={version}: no manylinux x86_64 wheel on PyPI")


def main():
    dest = sys.argv[1]
    stamp = os.path.join(dest, "STAMP")
    if os.path.exists(stamp) and open(stamp).read().strip() == STAMP:
        return 0
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for package, version, prefix in WHEELS:
            url = wheel_url(package, version)
            with zipfile.ZipFile(io.BufferedReader(RangeFile(url), buffer_size=1 << 16)) as z:
                members = [m for m in z.infolist() if m.filename.startswith(prefix) and not m.is_dir()
                           and not m.filename.endswith(".py")]
                for m in members:
                    out = os.path.join(tmp, "include", m.filename[len(prefix):])
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    with z.open(m) as src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst)
            print(f"fetched {len(members)} headers from {package}=={version}")
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"SKIPPED: PyPI is not reachable, so the CUDA 12.4 headers cannot be fetched ({e})")
        return 77
    with open(os.path.join(tmp, "STAMP"), "w") as f:
        f.write(STAMP + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
