"""``python -m truss_lab.faces.cli``: the ``truss-lab`` command."""

from . import main

main()
