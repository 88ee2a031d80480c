"""deploy/grafana and deploy/prometheus: the alert rules pass ``promtool check rules`` and their
unit tests, the dashboard's queries parse, and every metric either of them reads is on the
/metrics page of a real server after a short match."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from deploy import sync
from tute.v1 import rules_pb2, service_pb2

from ..support.replicas import Replica
from .manifests import DEPLOY, tool
from .promql import metric_names

ALERTS = DEPLOY / "prometheus" / "tute-alerts.yaml"
ALERT_TESTS = DEPLOY / "prometheus" / "tute-alerts.test.yaml"
DASHBOARD = DEPLOY / "grafana" / "tute.json"
# Read by TutePodsNotReady from kube-state-metrics: a pod that is not ready may not be scraped.
KUBE_STATE_METRICS = {"kube_deployment_status_replicas_unavailable"}
# What the dashboard is for: one panel at least reads each of these.
DASHBOARD_COVERS = {
    "grpc_server_handled_total",  # calls by method and code
    "grpc_server_handling_seconds_bucket",  # latency percentiles
    "tute_actions_total",  # actions by result
    "tute_watch_streams",  # open streams
    "tute_tables",  # tables by state
    "tute_timeouts_total",  # timeouts
    "tute_bot_think_seconds_bucket",  # bot think time
    "tute_store_seconds_bucket",  # store latency
    "tute_store_errors_total",  # store errors
    "tute_event_publish_seconds_bucket",  # event publish latency
}


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("promtool"), *args], capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for g in groups for rule in g["rules"]]


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the dashboard: its panels' and its variables'."""
    exprs = [t["expr"] for p in panels() for t in p["targets"]]
    for var in dashboard()["templating"]["list"]:
        if var["type"] == "query":
            found = re.fullmatch(r"label_values\((.*),\s*\w+\)", var["query"]["query"])
            assert found, var["query"]
            exprs.append(found.group(1))
    return exprs


def as_promql(expr: str) -> str:
    """A dashboard expression with Grafana's variables replaced by values."""
    expr = re.sub(r"\$__(rate_)?interval", "5m", expr)
    return re.sub(r"\$\{?\w+\}?", "x", expr)


def test_alert_rules_pass_promtool_check() -> None:
    out = promtool("check", "rules", str(ALERTS))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in out.stdout


def test_alert_rules_pass_their_unit_tests() -> None:
    out = promtool("test", "rules", ALERT_TESTS.name, cwd=ALERT_TESTS.parent)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_alert_has_a_unit_test_that_fires_it() -> None:
    tests = yaml.safe_load(ALERT_TESTS.read_text())["tests"]
    fired = {
        case["alertname"] for t in tests for case in t["alert_rule_test"] if case.get("exp_alerts")
    }
    assert fired == {r["alert"] for r in alert_rules()}
    for rule in alert_rules():
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_promtool_rejects_a_broken_rule(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: sum(\n")
    assert promtool("check", "rules", str(bad)).returncode != 0


def test_dashboard_queries_parse(tmp_path: Path) -> None:
    rules = [
        {"record": f"tute:dashboard:{i}", "expr": as_promql(e)}
        for i, e in enumerate(dashboard_queries())
    ]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    out = promtool("check", "rules", str(path))
    assert out.returncode == 0, out.stdout + out.stderr


def test_dashboard_shape() -> None:
    dash = dashboard()
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert {"datasource", "namespace", "pod"} <= variables
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in panels():
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["title"] and p["description"] and p["targets"]
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        assert p["fieldConfig"]["defaults"]["unit"]
        for t in p["targets"]:
            used = set(re.findall(r"\$(\w+)", t["expr"])) - {"__rate_interval"}
            assert used <= variables, (p["title"], used - variables)
    names = set().union(*(metric_names(e) for e in dashboard_queries()))
    assert names >= DASHBOARD_COVERS, DASHBOARD_COVERS - names


def test_prometheusrule_and_settings_table_are_current() -> None:
    """deploy/k8s/base/prometheusrule.yaml and deploy/README.md's settings table are what
    ``python -m deploy.sync`` writes from the rule file and service.config.Settings."""
    assert sync.PROMETHEUS_RULE.read_text() == sync.prometheus_rule()
    assert sync.README.read_text() == sync.readme_with_table(sync.README.read_text())
    assert sync.main(["--check"]) == 0


def scrape(port: int) -> set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
        text = page.read().decode()
    return {s.name for fam in text_string_to_metric_families(text) for s in fam.samples}


async def play_a_match(replica: Replica) -> int:
    """One player (us) and three server bots play a match to its end: we play the first legal
    action whenever our stream says it is our turn. Returns how many actions we sent."""
    stub = replica.stub
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="parejas"), take_seat=True, display_name="dash"
        )
    )
    me = (("authorization", f"Bearer {created.seat_token}"),)
    owner = getattr(created, "owner_token", "")  # AddBot takes the owner's token where it exists
    for _ in range(3):
        await stub.AddBot(
            service_pb2.AddBotRequest(table_id=created.table_id, level="random"),
            metadata=(("authorization", f"Bearer {owner}"),) if owner else me,
        )
    stream = stub.WatchTable(service_pb2.WatchTableRequest(table_id=created.table_id), metadata=me)
    sent = 0
    async for msg in stream:
        kind = msg.event.WhichOneof("kind") if msg.HasField("event") else "snapshot"
        if kind == "match_ended":
            stream.cancel()
            return sent
        if kind == "turn_started" and msg.event.turn_started.seat != created.seat:
            continue
        while True:  # our turn (or the snapshot): act until the turn moves on
            view = (
                await stub.GetTable(
                    service_pb2.GetTableRequest(table_id=created.table_id), metadata=me
                )
            ).view
            if not view.legal_actions:
                break
            await stub.SubmitAction(
                service_pb2.SubmitActionRequest(
                    table_id=created.table_id, action=view.legal_actions[0]
                ),
                metadata=me,
            )
            sent += 1
    raise AssertionError("the stream ended before the match")


async def test_every_metric_read_is_exported_by_a_real_server(tmp_path: Path) -> None:
    used = set().union(*(metric_names(e) for e in dashboard_queries()))
    used |= set().union(*(metric_names(r["expr"]) for r in alert_rules()))
    from_server = used - KUBE_STATE_METRICS
    assert len(from_server) >= len(DASHBOARD_COVERS)
    replica = Replica("dashboard", "memory", tmp_path)
    try:
        await replica.wait_ready()
        async with asyncio.timeout(120):
            assert await play_a_match(replica) >= 10
        with pytest.raises(grpc.aio.AioRpcError):  # one failed call: a non-OK code too
            await replica.stub.GetTable(service_pb2.GetTableRequest(table_id="no-such-table"))
        # Every name is there once the match is over: the tables gauge is set by the
        # scheduler's first pass, when the server starts.
        missing = from_server - await asyncio.to_thread(scrape, replica.metrics_port)
        assert not missing, (
            f"not on the server's /metrics page: {sorted(missing)}\n{replica.tail()}"
        )
    finally:
        await replica.stop()
