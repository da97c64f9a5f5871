#!/bin/sh
# Print a working interpreter for Python VERSION (e.g. 3.12): `pythonVERSION` on PATH, else one
# that pyenv installed; exit 1 if this machine has none. A pyenv shim for a version that is
# installed but not selected fails when run, so each candidate is run, not just found.
version=$1
for candidate in "python$version" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/"python$version"; do
    if "$candidate" -c 'import sys, venv, ensurepip' >/dev/null 2>&1; then
        command -v "$candidate"
        exit 0
    fi
done
exit 1
