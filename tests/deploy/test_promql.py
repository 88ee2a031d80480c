"""The metric-name reader the dashboard and alert tests rely on."""

from __future__ import annotations

from .promql import metric_names


def test_reads_names_through_functions_aggregations_and_matchers() -> None:
    expr = (
        "histogram_quantile(0.99, sum by (le, grpc_method) (rate(grpc_server_handling_seconds_"
        'bucket{namespace="$namespace",grpc_type=~"unary|x{y}"}[$__rate_interval])))'
        " / on (pod) group_left(node) max without (instance) (tute_watch_streams offset 5m)"
        " > bool 0 or absent(up) unless count(tute_tables[5m:1m]) > 1e3"
    )
    assert metric_names(expr) == {
        "grpc_server_handling_seconds_bucket",
        "tute_watch_streams",
        "up",
        "tute_tables",
    }


def test_a_bare_name_and_labels_only() -> None:
    assert metric_names("tute_timeouts_total") == {"tute_timeouts_total"}
    assert metric_names('sum(rate(x:recorded{le="0.5"}[1m])) by (le)') == {"x:recorded"}
    assert metric_names("1 + 2") == set()
