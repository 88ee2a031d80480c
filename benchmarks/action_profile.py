"""Where one action's time goes in the server: microseconds per stage, measured in this
harness (the server's code is not instrumented).

An in-process servicer (no gRPC) on the memory store plays random ``parejas-manos`` matches
with four seated players, each with a live subscription as a WatchTable stream has. For every
action the harness runs the stages of ``SubmitAction`` one after the other, calling the same
functions the server calls, in its order, timing each with ``perf_counter_ns``:

- ``decode``: the request message from its bytes, and the action from its message;
- ``auth``: the bearer token from the metadata, its SHA-256, the seat it opens;
- ``record load+decode``: ``Committer.load``: the store's load, the record (a copy of the one
  the last commit kept decoded when the store still holds its bytes, else ``decode_record``),
  the seats' presence;
- ``engine``: ``engine.apply`` alone (on the same state, its result discarded);
- ``event conversion``: the rest of ``changes.act`` (engine events to protobuf variants, the
  turn clock's TurnStarted), numbering and serializing the stored events;
- ``record encode``: the copy of the record the commit keeps decoded (a playing table's;
  the memory store keeps it as a :class:`~service.store.base.Deferred` that is never encoded
  while the copy stays kept, so no ``encode_record`` here; Redis would add one);
- ``response``: the SubmitActionResponse's bytes: its events, and the caller's view as the
  servicer writes it (:func:`service.wire.view_bytes`);
- ``store commit``: the memory store's compare-and-set (and the push to the subscriptions),
  then keeping the committed record decoded;
- ``fan-out``: what each of the four watchers reads of each event: the time and the seat
  whose occupancy it ends, which the committing replica's stored events carry (a stream
  reads them from the bytes only for events another replica committed), and the publish
  latency it observes;
- ``stream encode``: each watcher's ``WatchTableResponse`` bytes framed around the stored
  event bytes (`service.servicer.batch_response`: nothing is serialized again).

Then the same actions end to end through ``TuteServicer.SubmitAction`` (everything but gRPC), so
that the total can be set beside the server CPU per action the service benchmark measures:
the difference is gRPC, HTTP/2, the interceptor and the stream tasks. Every other one of
those asks for ``omit_view`` (as the benchmark's pattern (b) does), timed apart.

    python -m benchmarks.action_profile --actions 2000
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import random
import statistics
import time
from typing import Any

import structlog

import engine
from service import wire
from service.auth import bearer_token, hash_token
from service.config import Settings
from service.metrics import Metrics
from service.servicer import TuteServicer, batch_response
from service.store.base import Commit, Deferred
from service.store.memory import MemoryStore
from service.tables import changes, streams
from service.tables.model import copy_record, encode_record
from service.tables.service import TableService
from tute.v1 import rules_pb2, service_pb2

PRESET = "parejas-manos"
STAGES = (
    "decode",
    "auth",
    "record load+decode",
    "engine",
    "event conversion",
    "record encode",
    "response",
    "store commit",
    "fan-out",
    "stream encode",
)


class _Context:
    """What the servicer reads of a call's context."""

    def __init__(self, token: str | None = None) -> None:
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"


async def _table(servicer: TuteServicer) -> tuple[str, dict[int, str]]:
    created = await servicer.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset=PRESET), take_seat=True, display_name="p"
        ),
        _Context(),
    )
    tokens = {created.seat: created.seat_token}
    for seat in range(1, 4):
        joined = await servicer.JoinTable(
            service_pb2.JoinTableRequest(table_id=created.table_id, seat=seat, display_name="p"),
            _Context(),
        )
        tokens[seat] = joined.seat_token
    return created.table_id, tokens


async def staged(
    servicer: TuteServicer, store: MemoryStore, n: int, rng: random.Random, deadline: float
) -> dict[str, list[int]]:
    samples: dict[str, list[int]] = {s: [] for s in STAGES}
    app, commits = servicer.tables, servicer.tables.commits
    publish = app.metrics.publish
    pc = time.perf_counter_ns
    done = 0
    while done < n and time.monotonic() < deadline:
        table_id, tokens = await _table(servicer)
        subs = [await store.subscribe(table_id) for _ in range(4)]
        try:
            while done < n and time.monotonic() < deadline:
                rec = await app.load(table_id)
                if rec.status != "playing" or rec.state is None:
                    break
                seat_on_turn = rec.state.turn
                act = rng.choice(engine.legal_actions(rec.state, seat_on_turn))
                body = service_pb2.SubmitActionRequest(
                    table_id=table_id, action=wire.action_to_proto(act)
                ).SerializeToString()
                md = (("authorization", f"Bearer {tokens[seat_on_turn]}"),)
                t = [pc()]
                req = service_pb2.SubmitActionRequest.FromString(body)
                action = wire.action_from_proto(req.action)
                t.append(pc())
                token = bearer_token(md)
                assert token is not None
                th = hash_token(token)
                t.append(pc())
                rec = await commits.load(table_id)  # the record kept decoded, or decoded
                seat = rec.seat_of_token_hash(th)
                assert seat is not None
                t.append(pc())
                state_before = rec.state
                assert state_before is not None
                engine.apply(state_before, seat, action)
                t.append(pc())
                now = app.clock()
                variants = changes.act(rec, seat, action, now=now).events
                commits.set_expiry(rec, now)
                stored = commits.number(rec, variants, now)
                t.append(pc())
                kept = copy_record(rec)
                record = Deferred(functools.partial(encode_record, kept))
                t.append(pc())
                resp = service_pb2.SubmitActionResponse(
                    table_version=rec.version, events=[v.for_seat(seat) for v in variants]
                )
                wire.with_view(  # as the servicer answers: the view as bytes
                    service_pb2.SubmitActionResponse,
                    wire.view_bytes(rec, seat),
                    resp.SerializeToString(),
                ).SerializeToString()
                t.append(pc())
                outcome = await store.commit(
                    table_id,
                    Commit(
                        rec.version - 1,
                        record,
                        stored,
                        status=rec.status,
                        lobby=commits.lobby_entry(rec),
                        due_at=commits.due_at(rec, now),
                    ),
                )
                assert outcome.applied
                commits._keep_decoded(table_id, record, kept)
                t.append(pc())
                per_seat = [[ev.for_seat(s) for ev in stored] for s in range(4)]
                for s in range(4):  # what a stream reads of each event: its time and seat
                    for ev in stored:
                        streams.ends_occupancy(ev.ended_seat, s)
                        publish.observe(max(0.0, app.clock() - ev.time))
                t.append(pc())
                for events in per_seat:
                    batch_response(events)
                t.append(pc())
                for i, stage in enumerate(STAGES):
                    samples[stage].append(t[i + 1] - t[i])
                done += 1
                for sub in subs:  # what the commit pushed, as a stream would take it
                    sub.ready(len(stored))
        finally:
            for sub in subs:
                await sub.close()
    return samples


async def end_to_end(
    servicer: TuteServicer, n: int, rng: random.Random, deadline: float
) -> tuple[list[int], list[int]]:
    """SubmitAction through the servicer: every other action with ``omit_view`` (what a
    client playing from its stream asks), the samples of each kind apart."""
    out: tuple[list[int], list[int]] = ([], [])
    pc = time.perf_counter_ns
    app = servicer.tables
    done = 0
    while done < n and time.monotonic() < deadline:
        table_id, tokens = await _table(servicer)
        while done < n and time.monotonic() < deadline:
            rec = await app.load(table_id)
            if rec.status != "playing" or rec.state is None:
                break
            seat = rec.state.turn
            act = rng.choice(engine.legal_actions(rec.state, seat))
            omit = done % 2 == 1
            req = service_pb2.SubmitActionRequest(
                table_id=table_id, action=wire.action_to_proto(act), omit_view=omit
            )
            t0 = pc()
            await servicer.SubmitAction(req, _Context(tokens[seat]))
            out[omit].append(pc() - t0)
            done += 1
    return out


async def profile(n: int, seed: int, timeout: float) -> dict[str, Any]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    store = MemoryStore()
    settings = Settings(
        create_rate_per_s=0, watch_rate_per_s=0, max_streams_per_caller=0, max_tables=1_000_000
    )
    app = TableService(store, settings, Metrics())
    await app.start_history()  # where finished matches' records go (in memory by default)
    servicer = TuteServicer(app)
    rng = random.Random(seed)
    deadline = time.monotonic() + timeout
    samples = await staged(servicer, store, n, rng, deadline)
    e2e, lean = await end_to_end(servicer, 2 * n, rng, deadline)
    app.close_bots()
    stages = {
        s: {
            "median_us": round(statistics.median(v) / 1e3, 1),
            "mean_us": round(statistics.fmean(v) / 1e3, 1),
        }
        for s, v in samples.items()
        if v
    }
    return {
        "actions": len(samples["decode"]),
        "stages": stages,
        "stages_sum_mean_us": round(sum(s["mean_us"] for s in stages.values()), 1),
        "submit_action_in_process_mean_us": round(statistics.fmean(e2e) / 1e3, 1) if e2e else None,
        "submit_action_in_process_median_us": round(statistics.median(e2e) / 1e3, 1)
        if e2e
        else None,
        "submit_action_omit_view_mean_us": round(statistics.fmean(lean) / 1e3, 1) if lean else None,
        "submit_action_omit_view_median_us": round(statistics.median(lean) / 1e3, 1)
        if lean
        else None,
        "engine_build": "python" if engine.game.__file__.endswith(".py") else "mypyc",
    }


def print_table(result: dict[str, Any], server_cpu_us: float | None = None) -> None:
    print(
        f"one action through the server, {result['actions']} actions of {PRESET} "
        f"(in process, memory store, {result['engine_build']} engine):"
    )
    print(f"  {'stage':<22} {'median us':>10} {'mean us':>9}")
    for stage, row in result["stages"].items():
        print(f"  {stage:<22} {row['median_us']:>10.1f} {row['mean_us']:>9.1f}")
    print(f"  {'sum of the stages':<22} {'':>10} {result['stages_sum_mean_us']:>9.1f}")
    print(
        f"  {'SubmitAction, no gRPC':<22} {result['submit_action_in_process_median_us']:>10.1f} "
        f"{result['submit_action_in_process_mean_us']:>9.1f}"
    )
    if result["submit_action_omit_view_mean_us"] is not None:
        print(
            f"  {'the same, omit_view':<22} {result['submit_action_omit_view_median_us']:>10.1f} "
            f"{result['submit_action_omit_view_mean_us']:>9.1f}"
        )
    if server_cpu_us:
        # pattern (b) asks for omit_view; the median, as a wall-clock mean on a shared machine
        # holds the time the process was not running
        lean = result["submit_action_omit_view_median_us"]
        rest = server_cpu_us - (lean or result["submit_action_in_process_median_us"])
        print(
            f"  {'gRPC, HTTP/2, streams':<22} {'':>10} {rest:>9.1f}  (server CPU per action "
            f"{server_cpu_us:.0f} us, pattern b, minus the in-process call's median)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--actions", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--server-cpu-us", type=float, default=0.0)
    a = ap.parse_args()
    result = asyncio.run(profile(a.actions, a.seed, a.timeout))
    print_table(result, a.server_cpu_us or None)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
