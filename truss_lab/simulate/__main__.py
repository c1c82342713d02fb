"""``python -m truss_lab.simulate --out DIR --runs N --seed S``."""

from ._simulate import main

raise SystemExit(main())
