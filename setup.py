"""The one compiled part: the local lexical channel's BM25 sums (adapters/local/_bm25.c).

Optional: where no C compiler is found the build goes on without it and the same sums are
computed in numpy (adapters/local/lexical_search.py), to the bit. Contraction of floating-point
operations is turned off so the C arithmetic rounds exactly as numpy's does.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("adapters.local._bm25", ["adapters/local/_bm25.c"], optional=True, extra_compile_args=["-O2", "-ffp-contract=off"]),
    ],
)
