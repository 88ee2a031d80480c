"""The rendered Kubernetes manifests of deploy/k8s (``kubectl kustomize``), and the server
settings each container would run with."""

from __future__ import annotations

import base64
import dataclasses
import functools
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from service.config import Settings, load_settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
OVERLAYS = ("single", "scaled")
SETTING_NAMES = {"TUTE_" + f.name.upper() for f in dataclasses.fields(Settings)}
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")

Obj = dict[str, Any]


def tool(name: str) -> str:
    """A command on PATH or beside this Python (the venv's bin): ``make system-deps`` installs
    them where they are missing."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} not found: run `make system-deps`"
    return found


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


@functools.cache
def render(overlay: str) -> tuple[Obj, ...]:
    """The objects ``kubectl kustomize deploy/k8s/overlays/<overlay>`` prints."""
    out = subprocess.run(
        [tool("kubectl"), "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return tuple(doc for doc in yaml.safe_load_all(out.stdout) if doc)


class Rendered:
    """One overlay's objects, with lookups."""

    def __init__(self, overlay: str) -> None:
        self.overlay = overlay
        self.objects = render(overlay)

    def of_kind(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, kind: str, name: str) -> Obj:
        found = [o for o in self.of_kind(kind) if o["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.overlay}: no single {kind} {name}"
        return found[0]

    def one(self, kind: str) -> Obj | None:
        found = self.of_kind(kind)
        assert len(found) <= 1, f"{self.overlay}: several {kind}"
        return found[0] if found else None

    def workloads(self) -> Iterator[Obj]:
        for o in self.objects:
            if o["kind"] in WORKLOAD_KINDS:
                yield o

    @property
    def server(self) -> Obj:
        """The tute Deployment."""
        return self.get("Deployment", "tute")

    @property
    def pod(self) -> Obj:
        spec: Obj = self.server["spec"]["template"]["spec"]
        return spec

    @property
    def container(self) -> Obj:
        found = [c for c in self.pod["containers"] if c["name"] == "tute"]
        assert len(found) == 1
        return found[0]

    def environment(self, container: Obj) -> dict[str, str]:
        """The container's environment as the kubelet would set it (envFrom, then env)."""
        env: dict[str, str] = {}
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                env.update(self.get("ConfigMap", source["configMapRef"]["name"])["data"])
            if "secretRef" in source:
                secret = self.get("Secret", source["secretRef"]["name"])
                env.update({k: base64.b64decode(v).decode() for k, v in secret["data"].items()})
        for var in container.get("env", []):
            if "value" in var:
                env[var["name"]] = var["value"]
            elif "configMapKeyRef" in var.get("valueFrom", {}):
                ref = var["valueFrom"]["configMapKeyRef"]
                env[var["name"]] = self.get("ConfigMap", ref["name"])["data"][ref["key"]]
            elif "secretKeyRef" in var.get("valueFrom", {}):
                ref = var["valueFrom"]["secretKeyRef"]
                data = self.get("Secret", ref["name"])["data"][ref["key"]]
                env[var["name"]] = base64.b64decode(data).decode()
            else:
                raise AssertionError(f"{var['name']}: a source the tests do not read")
        return env

    @property
    def settings(self) -> Settings:
        """The server's settings in the tute container (its TUTE_* variables and arguments)."""
        return load_settings(
            self.container.get("args", []), environ=self.environment(self.container)
        )


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())
