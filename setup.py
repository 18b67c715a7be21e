"""Build the compiled core: the Cython recorder plus the frame-internals shim.

Build directives live here and only here.  ``TRACER_DEBUG=1`` turns on Cython's
bounds and wraparound checks for debugging the core, and its event log: run with
``TRACER_LOG_EVENTS=1`` (stderr) or ``TRACER_LOG_EVENTS=path`` to have every
sys.monitoring callback and every replayed segment written out.

With GCC the extensions are built guided by a profile (``build_ext`` below):
built once instrumented, run over ``scripts/pgo_training.py``, built again laid out
by what ran.  ``TRACER_PGO=0`` builds them once, unguided (quicker while editing the
core); any failure of the guided build falls back to that, with a warning.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext

DEBUG = os.environ.get("TRACER_DEBUG") == "1"
PGO = not DEBUG and os.environ.get("TRACER_PGO", "1").strip().lower() not in ("0", "off", "false", "no")
HERE = os.path.dirname(os.path.abspath(__file__))

core = Extension(
    "tracer._core",
    sources=["src/tracer/_core.pyx", "src/tracer/_frame.c"],
    depends=["src/tracer/_frame.h", *glob.glob("src/tracer/_core/*.pxi")],
    include_dirs=["src/tracer"],
    define_macros=[("TRACER_DEBUG_BUILD", "1")] if DEBUG else [],
    # Functions start on a 64-byte line: where a hot function starts within its
    # line moved with unrelated changes elsewhere in the module, and with it the
    # call path's speed (words 76 -> 82 ns a node for the very same instructions,
    # counted by cachegrind; bench/RESULTS.md, session 35).  Aligned, the hot code
    # sits the same way in every build, and words, fib, json and h trace 2-5 %
    # faster than unaligned.
    extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O2", "-falign-functions=64"])
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


class build_ext(_build_ext):
    """Build the extensions guided by a profile of the training run (GCC's
    ``-fprofile-generate``, then ``-fprofile-use``).

    Why: the recorder's hot paths are a few percent of a large module, and where
    the linker happens to place them moved call-dense workloads by 5–10 % from one
    unrelated change to the next (bench/RESULTS.md, sessions 21–31).  Laid out by a
    profile, the hot code is grouped together and its likely branches fall
    through: call-dense workloads trace 6–15 % faster (session 33).  The training
    program is not the benchmarks' workloads.
    """

    def build_extensions(self):
        if not PGO or self.compiler.compiler_type != "unix":
            return super().build_extensions()
        profile_dir = tempfile.mkdtemp(prefix="tracer-pgo-")
        plain_args = {id(ext): (list(ext.extra_compile_args), list(ext.extra_link_args))
                      for ext in self.extensions}
        try:
            self._set_flags(plain_args, [f"-fprofile-generate={profile_dir}", "-fprofile-update=single"],
                            [f"-fprofile-generate={profile_dir}"])
            self.force = True  # an up-to-date extension left as it is would be uninstrumented
            super().build_extensions()
            self._train()
            # (GCC names a profile by the object file's path: mangled into one name
            # for a relative path, kept as subdirectories for an absolute one)
            if not glob.glob(os.path.join(profile_dir, "**", "*.gcda"), recursive=True):
                raise RuntimeError(f"the training run left no profile in {profile_dir}")
            self._set_flags(plain_args, [f"-fprofile-use={profile_dir}", "-fprofile-partial-training",
                                         "-Wno-missing-profile"], [])
            super().build_extensions()   # (still forced: each extension built again)
        except Exception as exc:  # any compiler, platform or training failure: build unguided
            print(f"tracer: the profile-guided build failed ({exc}); building without a profile "
                  f"(set TRACER_PGO=0 to skip the attempt)", file=sys.stderr)
            self._set_flags(plain_args, [], [])
            self.force = True
            super().build_extensions()
        finally:
            shutil.rmtree(profile_dir, ignore_errors=True)

    def initialize_options(self):
        super().initialize_options()
        self._built = {}   # extension name -> the file this build wrote it to

    def build_extension(self, ext):
        super().build_extension(ext)
        # Where this build wrote the extension, so that the training runs exactly these
        # files (an in-place or editable build refreshes the copies in the source tree
        # only after build_extensions returns: until then they are the previous build's).
        self._built[ext.name] = self.get_ext_fullpath(ext.name)

    def _set_flags(self, plain_args, compile_flags, link_flags):
        for ext in self.extensions:
            compile_args, link_args = plain_args[id(ext)]
            ext.extra_compile_args = compile_args + compile_flags
            ext.extra_link_args = link_args + link_flags

    def _train(self):
        """Run the training program on the instrumented extensions, from a staged copy
        of the package (the build's outputs beside the sources' Python modules)."""
        with tempfile.TemporaryDirectory(prefix="tracer-pgo-stage-") as stage:
            shutil.copytree(os.path.join(HERE, "src", "tracer"), os.path.join(stage, "tracer"),
                            ignore=shutil.ignore_patterns("*.so", "*.c", "*.pyx", "*.pxi", "*.h",
                                                          "__pycache__", "*.html"))
            for ext in self.extensions:
                built = self._built[ext.name]
                shutil.copy2(built, os.path.join(stage, self.get_ext_filename(ext.name)))
            env = dict(os.environ, TRACER_PGO_STAGE=stage, OPENBLAS_NUM_THREADS="1")
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [stage, env.get("PYTHONPATH")]))
            subprocess.run([sys.executable, os.path.join(HERE, "scripts", "pgo_training.py")],
                           env=env, check=True, cwd=stage, timeout=600)


setup(
    cmdclass={"build_ext": build_ext},
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
