"""The ``dphist`` command line: argument parsing and printing over the library.

Every command checks all of its options before reading any data or spending any
budget. Exit codes: 0 success, 2 a usage error (a bad option or value, including a
request the privacy rules refuse, such as bins derived from the data), 1 a failure
while running (an unreadable input, an output that cannot be written), 130
interrupted (Ctrl-C). Every error is one line on stderr starting ``dphist: error:``;
no traceback reaches the user (``DPHIST_TRACEBACK=1`` shows one for internal errors).

Commands: ``demo`` and ``methods`` (:mod:`.info`), ``publish`` (:mod:`.publish`),
``check`` (:mod:`.check`: for the data owner, not private), ``plan`` (:mod:`.plan`),
``groupsize`` (:mod:`.groupsize`), ``budget`` (:mod:`.budget`), ``stream``
(:mod:`.stream`), ``bench`` and ``reproduce`` (:mod:`.lab`). A command's module is
imported only when that command runs (``dphist budget show`` starts without numpy);
the help and an unknown command import them all. ``budget show`` given plainly runs
without Typer at all (:mod:`.budget_show`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Any

from ..errors import DphistError

__all__ = ["app", "main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
PREFIX = "dphist: error: "
# each command's module, whose import registers it on the app (in this order)
_MODULES = ("budget", "check", "groupsize", "info", "lab", "plan", "publish", "stream")
_COMMANDS = {"demo": "info", "methods": "info", "bench": "lab", "reproduce": "lab"}


def _register(args: Sequence[str] | None = None) -> tuple[str, ...]:
    """Import the module of the command ``args`` names (the first argument that is not
    an option: the top level has only flags), or every module when it names none."""
    name = next((a for a in args or () if not a.startswith("-")), None)
    module = _COMMANDS.get(name, name) if name is not None else None
    wanted = (module,) if module in _MODULES else _MODULES
    for module in wanted:
        import_module(f".{module}", __name__)
    return tuple(m for m in _MODULES if f"{__name__}.{m}" in sys.modules)


def __getattr__(name: str) -> Any:
    """``app``: the Typer app with every command registered."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _register()
    return import_module(".base", __name__).app


def _fail(message: str, code: int) -> int:
    first = (message.strip().splitlines() or [""])[0]
    print(PREFIX + first, file=sys.stderr)
    return code


@functools.cache
def _command(registered: tuple[str, ...]) -> Any:
    """The click command built from the Typer app with the ``registered`` command
    modules (once per set and process: it costs ~20 ms)."""
    import typer

    from .base import app

    return typer.main.get_command(app)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return EXIT_OK if _plain(args) else _typer(args)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except DphistError as exc:
        return _fail(str(exc), EXIT_ERROR)
    except MemoryError:
        return _fail("out of memory; use fewer bins or a lighter method", EXIT_ERROR)
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}", EXIT_ERROR)
    except Exception as exc:
        if os.environ.get("DPHIST_TRACEBACK"):
            raise
        return _fail(
            f"internal error ({type(exc).__name__}); this is a bug, please report it "
            "(DPHIST_TRACEBACK=1 shows the traceback)",
            EXIT_ERROR,
        )


def _plain(args: list[str]) -> bool:
    """``dphist budget show`` given plainly runs without building the Typer app
    (:mod:`.budget_show`: Typer's conversions would cost more than the command); False
    for every other command line."""
    if args[:2] != ["budget", "show"]:
        return False
    from .budget_show import plain

    return plain(args[2:])


def _typer(args: list[str]) -> int:
    """Run ``args`` through the Typer app; its own errors become exit codes here, the
    rest in :func:`main`."""
    import typer

    from .base import UsageError

    command = _command(_register(args))
    try:
        result = command.main(args=args, prog_name="dphist", standalone_mode=False)
    except typer.Abort:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except UsageError as exc:
        name = args[0] if args and not args[0].startswith("-") else ""
        return _fail(f"{exc} (see 'dphist {name} --help')".replace("  ", " "), EXIT_USAGE)
    except typer.TyperException as exc:  # click's usage errors carry exit code 2
        code = getattr(exc, "exit_code", EXIT_ERROR)
        ctx = getattr(exc, "ctx", None)
        hint = (
            f" (see '{ctx.command_path} --help')" if ctx is not None and code == EXIT_USAGE else ""
        )
        return _fail(f"{exc.format_message()}{hint}", code)
    if result == EXIT_INTERRUPTED:  # Typer turns Ctrl-C into this exit code silently
        return _fail("interrupted", EXIT_INTERRUPTED)
    return result if isinstance(result, int) else EXIT_OK
