"""Writes the deployment files derived from elsewhere, so they cannot drift:

- the table of every ``TUTE_*`` setting in deploy/README.md, from ``service.config.Settings``;
- deploy/k8s/base/prometheusrule.yaml (for the Prometheus Operator), from the rule file
  deploy/prometheus/tute-alerts.yaml.

``python -m deploy.sync`` rewrites both; ``python -m deploy.sync --check`` only says whether they
are current (exit 1 if not). tests/deploy checks the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import yaml

from service.config import _HELP, Settings

DEPLOY = Path(__file__).resolve().parent
README = DEPLOY / "README.md"
ALERTS = DEPLOY / "prometheus" / "tute-alerts.yaml"
PROMETHEUS_RULE = DEPLOY / "k8s" / "base" / "prometheusrule.yaml"
BEGIN = "<!-- settings table: python -m deploy.sync -->"
END = "<!-- end of settings table -->"


def env_name(field: str) -> str:
    return "TUTE_" + field.upper()


def _default(value: object) -> str:
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, str) and not value:
        return "(empty)"
    return f"`{value}`"


def settings_table() -> str:
    """A Markdown table: every setting's variable, flag, default and meaning."""
    rows = ["| variable | flag | default | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(Settings):
        meaning = _HELP[f.name].replace("|", "\\|")
        flag = "--" + f.name.replace("_", "-")
        rows.append(f"| `{env_name(f.name)}` | `{flag}` | {_default(f.default)} | {meaning} |")
    return "\n".join(rows)


def readme_with_table(text: str) -> str:
    """``text`` (the README) with the part between the markers replaced by the current table."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + settings_table() + "\n" + text[end:]


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the PromQL expressions) as literal blocks, as in the rule file."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def prometheus_rule() -> str:
    """A PrometheusRule object carrying the rule file's groups."""
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    obj = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "tute", "labels": {"app.kubernetes.io/name": "tute"}},
        "spec": {"groups": groups},
    }
    header = (
        "# Written by `python -m deploy.sync` from deploy/prometheus/tute-alerts.yaml: edit that\n"
        "# file, then run it again.\n"
    )
    return header + yaml.dump(obj, Dumper=_Dumper, sort_keys=False, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.sync", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check, write nothing")
    args = parser.parse_args(argv)
    wanted = {
        README: readme_with_table(README.read_text()),
        PROMETHEUS_RULE: prometheus_rule(),
    }
    stale = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for p in stale:
            print(f"{p.relative_to(DEPLOY.parent)} is not current: run python -m deploy.sync")
        return 1 if stale else 0
    for p in stale:
        p.write_text(wanted[p])
        print(f"wrote {p.relative_to(DEPLOY.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
