"""Build the compiled core: the Cython recorder plus the frame-internals shim.

Build directives live here and only here.  ``TRACER_DEBUG=1`` turns on Cython's
bounds and wraparound checks for debugging the core, and its event log: run with
``TRACER_LOG_EVENTS=1`` (stderr) or ``TRACER_LOG_EVENTS=path`` to have every
sys.monitoring callback and every replayed segment written out.
"""
import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("TRACER_DEBUG") == "1"

core = Extension(
    "tracer._core",
    sources=["src/tracer/_core.pyx", "src/tracer/_frame.c"],
    depends=["src/tracer/_frame.h", *glob.glob("src/tracer/_core/*.pxi")],
    include_dirs=["src/tracer"],
    define_macros=[("TRACER_DEBUG_BUILD", "1")] if DEBUG else [],
    extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O2"])
    + ["-Werror=implicit-function-declaration", "-Werror=int-conversion"],
)

# The plan builder's typed layout pass (the analysis layer's own helper: it imports
# nothing of tracer; tracer.analysis.bytecode falls back to Python without it).
fastplan = Extension(
    "tracer.analysis._fastplan",
    sources=["src/tracer/analysis/_fastplan.pyx"],
    extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O2"])
    + ["-Werror=implicit-function-declaration", "-Werror=int-conversion"],
)

# The plan cache's typed load path (tracer.analysis.cache falls back to Python).
fastcache = Extension(
    "tracer.analysis._fastcache",
    sources=["src/tracer/analysis/_fastcache.pyx"],
    extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O2"])
    + ["-Werror=implicit-function-declaration", "-Werror=int-conversion"],
)

# Numpy array buffers of traced calls kept for the next one (a NEP 49 memory handler;
# numpy's headers at build time, so numpy is a build requirement in pyproject.toml).
arraypool = Extension(
    "tracer._arraypool",
    sources=["src/tracer/_arraypool.pyx"],
    include_dirs=[__import__("numpy").get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION")],
    extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O2"])
    + ["-Werror=implicit-function-declaration", "-Werror=int-conversion"],
)

setup(
    ext_modules=cythonize(
        [core, fastplan, fastcache, arraypool],
        language_level=3,
        compiler_directives={
            "boundscheck": DEBUG,
            "wraparound": DEBUG,
            "initializedcheck": DEBUG,
            "cdivision": True,
            "embedsignature": True,
        },
    ),
)
