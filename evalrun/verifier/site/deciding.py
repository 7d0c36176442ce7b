"""What a verifier's deciding python gets at start-up (see `sitecustomize.py`), in this order:

1. every standard-library module name resolves from the standard library's own folders only (a
   finder first on `sys.meta_path`), except the names the task itself ships as modules (a task
   whose answer is `queue.py` keeps working): a `json.py` in the workspace is never imported in
   its place;
2. the process becomes non-dumpable, so the workspace's code it runs in children cannot ptrace
   it or write its `/proc/<pid>/mem`.
"""

import _imp
from _frozen_importlib_external import PathFinder


class StdlibFinder:
    """Finds standard-library modules in the standard library's folders, and nowhere else."""

    def __init__(self, names, folders):
        self.names = names
        self.folders = folders

    def find_spec(self, fullname, path=None, target=None):
        # a submodule follows its package's __path__, the stdlib's once the top one is
        if path is not None or fullname not in self.names:
            return None
        if _imp.is_builtin(fullname) or _imp.is_frozen(fullname):
            return None  # their own importers come before any path: nothing can shadow them
        spec = PathFinder.find_spec(fullname, self.folders)
        if spec is None:  # not installed here: never let the workspace provide it
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return spec

    def invalidate_caches(self):
        return None


def make_undumpable():
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except Exception:  # no ctypes or no prctl here: the sandbox's own shield still applies
        pass


def harden(stdlib_names, own, folders):
    import sys

    sys.meta_path.insert(0, StdlibFinder(frozenset(stdlib_names) - frozenset(own), folders))
    make_undumpable()
