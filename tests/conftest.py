"""Every server a test starts in a subprocess takes a free HTTP port (``TUTE_HTTP_PORT=0``),
never the default 8080 that a server already running on the machine may hold."""

from __future__ import annotations

import os

os.environ.setdefault("TUTE_HTTP_PORT", "0")
