"""``python -m clients``: the ``tute`` command."""

from .cli import main

main()
