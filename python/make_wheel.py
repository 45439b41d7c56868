#!/usr/bin/env python3
"""make_wheel.py — assembles the tgc wheel (//python:wheel) from the built pieces, without
rules_python: a wheel is a zip of the package files plus a .dist-info folder (METADATA, WHEEL and
RECORD with a sha256 per file; PEP 427/376). The archive is reproducible (sorted entries, fixed
timestamps). The extension is imported once first to check that the wheel's version (from
python/BUILD) equals the driver's tgcVersion().

  make_wheel.py --out tgc-0.1.0-cp311-cp311-linux_x86_64.whl --version 0.1.0 --python 3.11 \
      --init tgc/__init__.py --ext _tgc.so --plugin libtgc_cutlass_sm90.so --readme README.md
"""
import argparse
import base64
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import zipfile


def extension_version(ext, py):
    """__version__ of the built extension (imported from a temporary copy)."""
    if "%d.%d" % sys.version_info[:2] != py:
        sys.exit(f"make_wheel.py: python3 is {sys.version.split()[0]}, the extension is built for "
                 f"Python {py} (PY_VERSION in python/BUILD)")
    tmp = tempfile.mkdtemp(prefix="tgc-wheel-")
    try:
        path = os.path.join(tmp, "_tgc.so")
        shutil.copyfile(ext, path)
        spec = importlib.util.spec_from_file_location("_tgc", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.__version__
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def main():
    ap = argparse.ArgumentParser()
    for a in ("--out", "--version", "--python", "--init", "--ext", "--plugin", "--readme"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()

    got = extension_version(args.ext, args.python)
    if got != args.version:
        sys.exit(f"make_wheel.py: the driver's tgcVersion() is {got}, python/BUILD says "
                 f"{args.version}: update TGC_VERSION in python/BUILD")

    tag = "cp" + args.python.replace(".", "")
    abi_suffix = f".cpython-{tag[2:]}-x86_64-linux-gnu.so"
    dist = f"tgc-{args.version}.dist-info"
    with open(args.readme, encoding="utf-8") as f:
        readme = f.read()
    files = {
        "tgc/__init__.py": open(args.init, "rb").read(),
        "tgc/_tgc" + abi_suffix: open(args.ext, "rb").read(),
        # The runtime loads the sm_90 GEMM plug-in from beside the module that holds it.
        "tgc/libtgc_cutlass_sm90.so": open(args.plugin, "rb").read(),
        f"{dist}/METADATA": (
            "Metadata-Version: 2.1\n"
            "Name: tgc\n"
            f"Version: {args.version}\n"
            "Summary: tgc, an ahead-of-time tensor-graph compiler (ONNX -> fused CPU/CUDA kernels)\n"
            f"Requires-Python: =={args.python}.*\n"
            "Requires-Dist: numpy\n"
            "Description-Content-Type: text/markdown\n\n" + readme).encode(),
        f"{dist}/WHEEL": (
            "Wheel-Version: 1.0\n"
            "Generator: tgc python/make_wheel.py\n"
            "Root-Is-Purelib: false\n"
            f"Tag: {tag}-{tag}-linux_x86_64\n").encode(),
        f"{dist}/top_level.txt": b"tgc\n",
    }
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n"
                     for name, data in sorted(files.items()))
    files[f"{dist}/RECORD"] = (record + f"{dist}/RECORD,,\n").encode()

    tmp_out = args.out + ".tmp"
    with zipfile.ZipFile(tmp_out, "w", zipfile.ZIP_DEFLATED) as z:
        # Package files first, dist-info last (RECORD at the very end), as installers expect.
        for name in sorted(files, key=lambda n: (n.startswith(dist), n.endswith("/RECORD"), n)):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, files[name])
    os.replace(tmp_out, args.out)


if __name__ == "__main__":
    main()
