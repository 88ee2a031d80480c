"""Print, as uv flags, where pip's configuration says packages come from.

uv does not read pip's configuration (pip.conf files, PIP_* variables), so `make venv` hands
it pip's own view of it: each index URL, extra index URL, find-links location and constraint
file that `pip config list` shows, for uv to resolve the same packages pip would.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

FLAGS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}

listed = subprocess.run(
    [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
).stdout
args: list[str] = []
for line in listed.splitlines():
    key, _, value = line.partition("=")
    flag = FLAGS.get(key.rsplit(".", 1)[-1])
    for item in shlex.split(value)[0].split() if flag and value else ():
        if item not in args:
            args += [flag, item]
print(shlex.join(args))
