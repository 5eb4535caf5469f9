"""Build hook: compile dphist's numba kernels at install (see ``dphist._precompile``).

Everything else is configured in ``pyproject.toml``. After the modules are built (or,
for an editable install, in place), ``dphist._precompile`` runs each method once so
numba's cache beside the installed sources holds their machine code, and a fresh
process's first release loads it instead of compiling. A failure only costs that
speed: kernels then compile on first use. ``DPHIST_PRECOMPILE=0`` skips it.
"""

import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPrecompiled(build_py):
    def run(self) -> None:
        super().run()
        if os.environ.get("DPHIST_PRECOMPILE", "1") == "0":
            return
        here = os.path.dirname(os.path.abspath(__file__))
        root = os.path.join(here, "src") if self.editable_mode else os.path.abspath(self.build_lib)
        env = dict(os.environ)
        env.pop("NUMBA_CACHE_DIR", None)  # the cache goes beside the installed sources
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # the path is given to the interpreter itself: pip's build environment drops a
        # source folder an earlier editable install put on the path
        code = f"import sys; sys.path.insert(0, {root!r}); from dphist._precompile import main; "
        try:
            subprocess.run([sys.executable, "-c", code + "sys.exit(main())"], env=env,
                           check=True, timeout=900)  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"dphist: kernels not compiled ahead ({exc}); they compile on first use",
                  file=sys.stderr)  # fmt: skip


setup(cmdclass={"build_py": BuildPrecompiled})
