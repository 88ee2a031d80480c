"""How long a table record takes to decode (a load) and encode (a commit), in microseconds.

The record is a mid-match ``parejas`` table (four humans, 17 cards into the first hand). The
figure is CPU time (``time.process_time``: waiting for a busy machine's cores is not counted),
the best of several rounds of ``timeit``. It runs on a tree whose record lives in
``service/model.py`` as well, so the same script measures before and after a change of the
codec; ``-S`` keeps an editable install of another tree out of the imports (the codec needs the
standard library only):

    python -m benchmarks.record_codec
    PYTHONPATH=<tree> python -S benchmarks/record_codec.py
"""

from __future__ import annotations

import argparse
import random
import time
import timeit
from typing import Any

import engine

try:
    from service.tables import model
except ImportError:  # a tree from before service/tables
    from service import model  # type: ignore[no-redef,attr-defined]


def mid_match_record() -> Any:
    rules = engine.Rules.preset("parejas")
    rng = random.Random(1)
    state = engine.new_match(rules, rng)
    for _ in range(17):
        state, _ = engine.apply(
            state, state.turn, rng.choice(engine.legal_actions(state, state.turn))
        )
    seats = [model.SeatInfo(model.HUMAN, f"P{i}", "ab" * 32, "", i + 1) for i in range(4)]
    return model.TableRecord(
        table_id="abcdef0123456789",
        preset="parejas",
        rules=rules,
        visibility=model.PUBLIC,
        invite_code="",
        created_at=1.7e9,
        seats=seats,
        status=model.PLAYING,
        state=state,
        deadline=1.7e9 + 30,
        turn_started=1.7e9,
        last_seq=40,
        version=12,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--number", type=int, default=5000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    rec = mid_match_record()
    data = model.encode_record(rec)
    assert model.decode_record(data).state == rec.state
    n = args.number
    timer = timeit.Timer(lambda: model.decode_record(data), timer=time.process_time)
    decode = min(timer.repeat(number=n, repeat=args.rounds))
    timer = timeit.Timer(lambda: model.encode_record(rec), timer=time.process_time)
    encode = min(timer.repeat(number=n, repeat=args.rounds))
    print(
        f"record of {len(data)} bytes: decode {decode / n * 1e6:.1f} us, "
        f"encode {encode / n * 1e6:.1f} us"
    )


if __name__ == "__main__":
    main()
