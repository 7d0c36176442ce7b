"""Run by every python of a verifier: is this process deciding, then the image's own hook.

A python is *deciding* when its main script is one of the task's hidden files, or it runs `-c`,
`-m` or a program from stdin; the agent's own programs a verifier runs (`python3 solution.py`)
are not, and keep their import semantics. A deciding process is hardened by `deciding.py`, whose
source this file carries as a string: only deciding processes pay for compiling it, and one file
is one write. Then every process runs the image's own sitecustomize, if there is one (Debian has
one), as python would have without this file. Python older than 3.10 (no
`sys.stdlib_module_names`) is only given that.
"""

import os
import sys

# evalrun.verifier.hardening replaces these two lines with the task's settings (absolute hidden
# paths,
# the module names the task ships) and deciding.py's source; each must stay on one line.
SETTINGS = {"hidden": [], "own": []}  # type: dict
DECIDING = ""


def is_deciding(argv0, hidden):
    """True for `-c`, `-m`, stdin (`-` or no script), and a main script that is a hidden file."""
    if argv0 in ("-c", "-m", "-", ""):
        return True
    real = os.path.realpath(argv0)
    return any(real == os.path.realpath(path) for path in hidden)


def stdlib_folders():
    """The standard library's folders: where `os` lives, its lib-dynload, and its zip."""
    base = getattr(sys, "_stdlib_dir", None) or os.path.dirname(os.__file__)
    folders = [base, os.path.join(base, "lib-dynload")]
    folders += [p for p in sys.path if p.endswith(".zip") and p.startswith(sys.base_prefix)]
    return folders


def run_file(path, name):
    """Execute the python file at `path` as a module called `name`, with importlib's machinery
    as python starts with it (`importlib.util` would cost every verifier python a dozen imports)."""
    from _frozen_importlib import module_from_spec
    from _frozen_importlib_external import spec_from_file_location

    spec = spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_image_hook(folders):
    """The image's own sitecustomize, from the stdlib or site-packages folders: this file took
    its place on the import path."""
    from _frozen_importlib_external import PathFinder

    try:
        import site

        folders = folders + list(site.getsitepackages())
    except AttributeError:  # a virtualenv's old site.py
        pass
    spec = PathFinder.find_spec("sitecustomize", folders)
    if spec is None or spec.origin is None:
        return
    if os.path.realpath(spec.origin) != os.path.realpath(__file__):
        run_file(spec.origin, "sitecustomize")


def main():
    folders = stdlib_folders()
    argv = getattr(sys, "argv", None) or [""]
    stdlib_names = getattr(sys, "stdlib_module_names", None)
    if stdlib_names is not None and is_deciding(argv[0], SETTINGS["hidden"]):
        deciding = {"__name__": "evalrun_deciding"}  # type: dict
        exec(compile(DECIDING, __file__ + ":DECIDING", "exec"), deciding)
        deciding["harden"](stdlib_names, SETTINGS["own"], folders)
    run_image_hook(folders)


if __name__ == "sitecustomize":
    main()
