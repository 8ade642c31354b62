"""The one compiled part: the local backend's BM25 sums (adapters/local/_kernels.c).

Optional: where no C compiler is found the build goes on without it, and the same results are
computed in numpy (adapters/local/kernels.py says where), to the bit. Contraction of
floating-point operations is turned off so the C arithmetic rounds exactly as numpy's does.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("adapters.local._kernels", ["adapters/local/_kernels.c"], optional=True, extra_compile_args=["-O2", "-ffp-contract=off"]),
    ],
)
