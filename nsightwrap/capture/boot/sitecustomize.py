"""Loads nsightwrap's capture layer into a Python process started by ``nsightwrap profile``.

``nsightwrap profile`` puts this folder first on ``PYTHONPATH``, so Python imports this module at
start-up (``site`` imports ``sitecustomize``). It takes itself off ``sys.path``, runs the
``sitecustomize`` that would have run without nsightwrap (if any), then installs the layer. It
never stops the program: a layer that cannot load leaves the program running as it would
without nsightwrap. Written for any Python 3 (another interpreter started by the target reads it).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _off_path():
    # The target sees sys.path as it would without nsightwrap (PYTHONPATH keeps the folder, so
    # that child processes load the layer too).
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]


def _chain():
    """Run the next sitecustomize on sys.path, the way site.py would have."""
    me = sys.modules.pop("sitecustomize", None)
    try:
        try:
            import sitecustomize  # noqa: F401 - the user's own, now that this folder is off the path
        except ImportError as exc:
            if getattr(exc, "name", None) != "sitecustomize":
                raise
    except Exception as err:  # what site.py prints for a failing sitecustomize
        if sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write(
                "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                + err.__class__.__name__ + ": " + str(err) + "\n"
            )
    # The import machinery that is running this module looks it up by name when it returns: the
    # user's sitecustomize stands there if there is one, else this module.
    if "sitecustomize" not in sys.modules and me is not None:
        sys.modules["sitecustomize"] = me


def _install():
    if os.environ.get("NSIGHTWRAP_CAPTURE") != "1":
        return
    try:
        from nsightwrap.capture.install import install
    except Exception:  # another interpreter without nsightwrap: run as without it
        return
    try:
        install()
    except Exception as exc:  # never stop the program
        try:
            from nsightwrap.capture.state import note_layer_error

            note_layer_error("install", exc)
        except Exception:
            pass


def _wait_for_go():
    """An ncu pass started early (``NSIGHTWRAP_GO_FILE``): import the modules the script will
    import (``NSIGHTWRAP_PREIMPORT``), then wait for the go file before the script's first line,
    so that nothing of the script runs, and no CUDA call is made, while the pass before it holds
    the GPU. Only this process waits: the variables leave the environment here."""
    go = os.environ.pop("NSIGHTWRAP_GO_FILE", None)
    names = os.environ.pop("NSIGHTWRAP_PREIMPORT", "")
    if not go:
        os.environ.pop("NSIGHTWRAP_GO_OWNER", None)
        return
    import time

    for name in [n for n in names.split(",") if n]:
        try:
            __import__(name)
        except Exception:  # the script's own import will say what is wrong, as without nsightwrap
            pass
    # nsightwrap stops a pass it does not need; if nsightwrap itself is killed outright, the
    # waiting process leaves too rather than wait forever.
    owner = os.environ.pop("NSIGHTWRAP_GO_OWNER", "")
    n = 0
    while not os.path.exists(go):
        time.sleep(0.005)
        n += 1
        if owner.isdigit() and n % 100 == 0 and not _alive(int(owner)):
            sys.stderr.write("nsightwrap: the profile that started this pass early has ended; exiting\n")
            os._exit(1)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


_off_path()
_chain()
_install()
_wait_for_go()
