"""Build of the optional compiled kernel; everything else is in pyproject.toml.

``cvxrank.native._sweep`` (C, no NumPy C API) speeds up the pair-free oracle's per-query sweeps.
It is optional: without a C compiler the install goes on and the oracle uses its numpy path
(:mod:`cvxrank.native.kernels`). Floating-point contraction is off so that its sums round like
numpy's (no fused multiply-add), which keeps the two paths equal bit for bit.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    def build_extensions(self):
        if self.compiler.compiler_type == "unix":
            for ext in self.extensions:
                ext.extra_compile_args = [*ext.extra_compile_args, "-ffp-contract=off", "-O2"]
        super().build_extensions()


setup(
    ext_modules=[Extension("cvxrank.native._sweep", ["cvxrank/native/_sweep.c"], optional=True)],
    cmdclass={"build_ext": BuildExt},
)
