"""Which build of the engine the tests run on, and the share of a long property run it takes.

`make test` runs tests/engine twice: on the pure engine (the source tree) and on the
mypyc-compiled one (`make test-compiled`), from the same source. The longest property runs
take their full count of examples on the compiled build, where they cost a fraction of the
time, and a quarter of it on the pure build: every example count of the issue's tests is met
by the compiled run, and the pure run still checks every property on the reference build.
"""

from __future__ import annotations

import engine.game

COMPILED = not engine.game.__file__.endswith(".py")
"""True when the engine imported is the mypyc build (its modules are extension modules)."""


def examples(n: int) -> int:
    """``n`` examples on the compiled engine, a quarter of them (at least 10) on the pure one."""
    return n if COMPILED else max(10, n // 4)
