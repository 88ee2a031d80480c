"""A watch stream's responses written from the events' stored bytes are byte for byte what
serializing the messages gives, for events of every size (one- and multi-byte lengths)."""

from __future__ import annotations

import random

from service import servicer as stream
from service import wire
from service.interceptor import passing_bytes
from tute.v1 import card_pb2, event_pb2, service_pb2, table_pb2


def _event(rng: random.Random, seq: int) -> event_pb2.Event:
    ev = event_pb2.Event(sequence=seq, table_version=seq // 2 + 1)
    ev.time.FromNanoseconds(rng.randrange(1, 2**62))
    kind = rng.randrange(3)
    if kind == 0:
        ev.card_played.seat = rng.randrange(4)
        ev.card_played.card.suit = card_pb2.SUIT_OROS
        ev.card_played.card.rank = rng.randrange(1, 13)
    elif kind == 1:  # a dealt hand: a long event (lengths of two bytes)
        ev.hand_dealt.hand.extend(
            card_pb2.Card(suit=card_pb2.SUIT_COPAS, rank=r % 12 + 1)
            for r in range(rng.randrange(1, 40))
        )
    else:
        ev.turn_started.seat = rng.randrange(4)
    return ev


def test_batches_and_single_events_are_the_messages_bytes() -> None:
    rng = random.Random(3)
    for trial in range(300):
        events = [_event(rng, trial * 10 + i) for i in range(rng.randrange(0, 12))]
        data = [e.SerializeToString() for e in events]
        batch = service_pb2.WatchTableResponse(events=service_pb2.EventBatch(events=events))
        assert stream.batch_response(data) == batch.SerializeToString()
        assert stream.watch_message(stream.batch_response(data)) == batch
        for e, d in zip(events, data, strict=True):
            one = service_pb2.WatchTableResponse(event=e)
            assert stream.event_response(d) == one.SerializeToString()
            play = stream.play_watch(stream.event_response(d))
            assert play == service_pb2.PlayTableResponse(watch=one).SerializeToString()


def test_a_long_batch_has_a_length_of_several_bytes() -> None:
    rng = random.Random(4)
    events = [_event(rng, i) for i in range(400)]
    data = [e.SerializeToString() for e in events]
    out = stream.batch_response(data)
    assert len(out) > 16384  # a length of three varint bytes
    assert stream.watch_message(out).events.events == events


def test_an_event_past_the_length_table_is_framed_alike() -> None:
    """Events of 2 kB and more (beyond the table of short lengths) alone and in a batch."""
    for cards in (150, 160, 400, 2000):
        ev = event_pb2.Event(sequence=1, table_version=1)
        ev.hand_dealt.hand.extend(
            card_pb2.Card(suit=card_pb2.SUIT_COPAS, rank=r % 12 + 1) for r in range(cards)
        )
        small = _event(random.Random(cards), 2)
        events = [ev, small, ev]
        data = [e.SerializeToString() for e in events]
        batch = service_pb2.WatchTableResponse(events=service_pb2.EventBatch(events=events))
        assert stream.batch_response(data) == batch.SerializeToString()
        one = service_pb2.WatchTableResponse(event=ev)
        assert stream.event_response(data[0]) == one.SerializeToString()
    assert len(data[0]) > 2048


def test_snapshots_stay_messages_and_the_serializer_passes_bytes_through() -> None:
    snap = service_pb2.WatchTableResponse()
    snap.snapshot.version = 7
    assert stream.watch_message(snap) is snap
    assert stream.play_watch(snap) == service_pb2.PlayTableResponse(watch=snap)
    serialize = passing_bytes(service_pb2.WatchTableResponse.SerializeToString)
    assert serialize is not None
    assert serialize(snap) == snap.SerializeToString()
    raw = stream.event_response(_event(random.Random(5), 1).SerializeToString())
    assert serialize(raw) is raw
    assert passing_bytes(None) is None


def test_a_stamped_event_carries_what_its_bytes_say_of_its_time_and_ended_seat() -> None:
    """The committing replica's streams read an event's time and the seat whose occupancy it
    ends from the stored event, not from its bytes: both say the same."""
    rng = random.Random(5)
    seat_events = [
        event_pb2.Event(seat_left=event_pb2.SeatLeft(seat=2)),
        event_pb2.Event(player_forfeited=event_pb2.PlayerForfeited(seat=1)),
        event_pb2.Event(seat_joined=event_pb2.SeatJoined(seat=table_pb2.Seat(index=3))),
    ]
    for i in range(200):
        ev = seat_events[i % 3] if i % 4 == 0 else _event(rng, i)
        ev.ClearField("time")
        now = rng.uniform(1.0, 4e9)
        stored = wire.stamp(wire.EventVariants(ev), i + 1, i // 2 + 1, now)
        msg = wire.parse(stored.public)
        assert stored.time == wire.event_time(msg)
        assert abs(stored.time - now) < 1e-6
        assert stored.ended_seat == wire.ended_seat(msg)
    assert [wire.ended_seat(e) for e in seat_events] == [2, 1, 3]
