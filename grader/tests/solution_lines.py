#!/usr/bin/env python3
# Solution lines in a copy of the course: every line over 30 characters inside a STUDENT BEGIN/END fence of
# solutions/*/kernels.cu and answers.cpp (and not in the lab's stub) is looked for in every file of COPY.
# Prints "file:line: text (from solution)" for each one found; exits 1 if any. Used by the release test
# (release_e2e.sh: a student copy) and the Gradescope test (gradescope_e2e.sh: an autograder package).
#   solution_lines.py SOURCE_DIR COPY
# A kernel line of a solution is also looked for under other names: its shape (every name but the language's and
# CUDA's own, and every number, replaced by one placeholder) in every code file and handout of COPY, so that an
# answer copied into harness code with its variables renamed (the calibration's FMA loop was Lab 02's, chain for
# chain) is found too. Prints "file:line: text (shape of a line of solutions/...)".
# A line that is no answer in the place it is found (an idiom every kernel writes the same way, a public test's
# own reference formula, a handout's worked launch) is let in there only: listed below by the first 12 hex
# digits of its SHA-1 (so this file quotes no solution), with where it may be. A new one fails the tests, which
# print the line and its hash: look at it before listing it.
import hashlib, os, re, sys
src, copy = sys.argv[1], sys.argv[2]
# (hash of the line, where it may be): what it is.
allowed = {
    ("2e768c936465", "docs/"): "a grid-stride loop in the instructor guide's example",
    ("6b0437bfc728", ""): "cuBLAS's alpha and beta",
    ("940f9dec3e30", ""): "a loop over iterations",
    ("436e7425d0dc", "labs/03-elementwise-intensity/"): "rows times columns, in Lab 03's tests",
    ("f1114e6bf6c1", "labs/"): "Lab 01's grid size, PROVIDED in later labs' stubs",
    ("cd30e8576f08", "labs/02-ridge-point/"): "a loop over Lab 02's chains in its lab.hpp",
    ("932cb4fc1e06", "labs/04-gemm/tests/"): "the cuBLAS baseline's call in Lab 04's perf test",
    ("ea318ea0c192", "labs/05-attention/tests/"): "the public test's own reference (sequence length)",
    ("6b3f7e2c4648", "labs/05-attention/tests/"): "the public test's own reference (length and head size)",
    ("38b5adc8a5ed", "labs/05-attention/tests/"): "the public test's own reference (causal pairs)",
    ("8fb0e28c3454", "labs/04-gemm/tests/"): "the public test's own reference (the shape as doubles)",
    ("ff8df2061d4f", "labs/04-gemm/tests/"): "the public test's own reference (GEMM FLOPs)",
    ("5dda0614eb8e", "labs/06-kv-cache/tests/"): "the public test's own reference (query heads per KV head)",
    ("0662ee87a72d", "labs/08-quantization/tests/"): "the public test's own reference (the quantization scale)",
    ("865f03ecb633", "labs/01-memory-bandwidth/README.md"): "the handout's worked launch of the copy kernel",
    ("a58af36927aa", "labs/03-elementwise-intensity/README.md"): "the handout's worked launch of GELU",
    ("ca07011f568b", "labs/04-gemm/README.md"): "the handout's worked launch of the naive GEMM",
    ("6e33dfd97762", "labs/04-gemm/README.md"): "the handout's worked launch of the naive GEMM",
    ("e04dd1e9dd11", "labs/04-gemm/README.md"): "the handout's worked launch of the naive GEMM",
    ("ccab7e626297", "labs/05-attention/README.md"): "the handout's worked launch of the Flash kernel",
    ("aee9681b2ba2", "docs/instructor-guide.md"): "the guide's example patch (a grid-stride loop, as every text has it)",
}
def let_in(needle, rel):
    h = hashlib.sha1(needle.encode()).hexdigest()[:12]
    return any(k == h and rel.startswith(where) for k, where in allowed)
fence = re.compile(r"STUDENT BEGIN[^\n]*\n(.*?)//\s*STUDENT END", re.S)
needles = {}
for lab in sorted(os.listdir(f"{src}/solutions")):
    for name in ("kernels.cu", "answers.cpp"):
        path = f"{src}/solutions/{lab}/{name}"
        if not os.path.isfile(path):
            continue
        stub_path = f"{src}/labs/{lab}/{name}"
        stub = [l.strip() for l in open(stub_path)] if os.path.isfile(stub_path) else []
        for body in fence.findall(open(path).read()):
            for line in body.splitlines():
                text = line.strip()
                # a line the stub has (whole or inside a longer one) is given to the student anyway
                if len(text) > 30 and not any(text in given for given in stub):
                    needles.setdefault(text, f"solutions/{lab}/{name}")

# ---- shapes ----
# Names that say what a line does wherever it is: keywords, types, CUDA's built-ins and intrinsics, WMMA.
KEEP = set("""for if else while do return break continue const constexpr static auto void bool char short int long float
double unsigned signed size_t std true false nullptr sizeof
half half2 __half __half2 __nv_bfloat16 __nv_bfloat162 float2 float4 int2 int4 uint2 uint4 char4
threadIdx blockIdx blockDim gridDim warpSize __shared__ __syncthreads __syncwarp reinterpret_cast static_cast
fmaf __fmaf_rn __fmul_rn __fadd_rn __hfma2 __hmul2 __hadd2 __hfma __float2half __half2float __float2half2_rn
__floats2half2_rn __half22float2 __low2float __high2float expf exp2f __expf logf fmaxf fminf sqrtf rsqrtf max min
__shfl_sync __shfl_xor_sync __shfl_down_sync __shfl_up_sync __ldg atomicAdd atomicMax __dp4a
wmma fragment matrix_a matrix_b accumulator row_major col_major load_matrix_sync store_matrix_sync mma_sync
fill_fragment mem_row_major mem_col_major""".split())
NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")  # a name not after '.': members (.x, .w) stay as written
NUMBER = re.compile(r"\b\d+(\.\d*)?[fFuUlL]*\b")
def shape(line):
    line = line.split("//")[0].strip()
    return NAME.sub(lambda m: m.group(0) if m.group(0) in KEEP else "_", NUMBER.sub("_", line))
def shape_hash(text):
    return hashlib.sha1(text.encode()).hexdigest()[:12]
# (hash of the shape, where it may be): what it is. The same rule as above: look before listing.
allowed_shapes = {
    ("6944f4b3b853", "common/tests/"): "a thread's index, in the timed-reads test's kernels",
    ("a1662abefafc", "labs/07-decode-batching/kernels.cu"): "Lab 07's PROVIDED loader splitting an index in two",
    ("1a9ece8f6f63", "labs/07-decode-batching/kernels.cu"): "Lab 07's PROVIDED loader splitting an index in two",
}
shapes = {}
for lab in sorted(os.listdir(f"{src}/solutions")):
    path = f"{src}/solutions/{lab}/kernels.cu"
    stub_path = f"{src}/labs/{lab}/kernels.cu"
    if not os.path.isfile(path):
        continue
    given = {shape(l) for l in open(stub_path)} if os.path.isfile(stub_path) else set()
    for body in fence.findall(open(path).read()):
        for line in body.splitlines():
            sh = shape(line)
            if len(sh) > 40 and sh not in given:
                shapes.setdefault(sh, f"solutions/{lab}/kernels.cu")
CODE = (".cu", ".cuh", ".cpp", ".cc", ".hpp", ".h", ".md")

found = 0
for root, _, files in os.walk(copy):
    for f in files:
        path = os.path.join(root, f)
        rel = os.path.relpath(path, copy)
        with open(path, errors="replace") as fh:
            whole = fh.read()
        # A needle holds no newline and starts and ends with no blank, so it is in a line exactly when it is in
        # the file: one search of the file per needle first, then the lines only for those it holds (most files
        # hold none; a search per line and needle took seconds per copy).
        held = {n: o for n, o in needles.items() if n in whole}
        for number, line in enumerate(whole.split("\n") if held else [], 1):
            text = line.strip()
            for needle, origin in held.items():
                if needle in text and not let_in(needle, rel):
                    sha = hashlib.sha1(needle.encode()).hexdigest()[:12]
                    print(f"{rel}:{number}: {needle}   (from {origin}; sha1 {sha})")
                    found += 1
        if not f.endswith(CODE):
            continue
        for number, line in enumerate(whole.split("\n"), 1):
            sh = shape(line)
            if sh in shapes and not any(n in line for n in held):
                h = shape_hash(sh)
                if not any(k == h and rel.startswith(where) for k, where in allowed_shapes):
                    print(f"{rel}:{number}: {line.strip()}   (shape of a line of {shapes[sh]}; shape sha1 {h})")
                    found += 1
print(f"{len(needles)} solution lines and {len(shapes)} shapes of kernel lines looked for in {copy}: {found} found",
      file=sys.stderr)
sys.exit(1 if found else 0)
