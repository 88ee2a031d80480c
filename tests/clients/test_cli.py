"""The ``tute`` command as processes against a real server: four ``tute bot`` processes
finish a match against each other, ``tute watch --plain`` follows it line by line, and
``tute tables`` lists the table while it waits for them."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from clients import TuteClient
from tute.v1 import table_pb2

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "protos")])
    return env


async def _tute(address: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clients",
        "--server",
        address,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(),
        cwd=REPO,
    )


async def _output(proc: asyncio.subprocess.Process, timeout: float = 60) -> str:
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_four_bot_processes_finish_a_match(address: str) -> None:
    async with TuteClient(address) as client:
        created = await client.create_table(
            preset="parejas", options={"turn_time_s": 0, "target_points": 1}
        )
        table_id = created.table_id
        lobby = await _output(await _tute(address, "tables", "--players", "4"))
        assert table_id in lobby and "parejas" in lobby
        watcher = await _tute(address, "watch", table_id, "--plain", "--until-over")
        # the watcher follows the table before the first bot sits (its first line is the
        # snapshot): a busy machine may start it later than four bots need to play the match
        assert watcher.stdout is not None
        snapshot = (await asyncio.wait_for(watcher.stdout.readline(), 60)).decode()
        bots = [
            await _tute(
                address,
                "bot",
                "--level",
                "random",
                "--table",
                table_id,
                "--name",
                f"bot-{i}",
                "--seed",
                str(i),
                "--quiet",
            )
            for i in range(4)
        ]
        results = await asyncio.gather(*(_output(b) for b in bots))
        watched = snapshot + await _output(watcher)
        view = await client.get_table(table_id=table_id)
    assert view.status == table_pb2.TABLE_STATUS_FINISHED
    names = sorted(s.display_name for s in view.seats)
    assert names == [f"bot-{i}" for i in range(4)]
    assert all(s.occupant == table_pb2.OCCUPANT_KIND_HUMAN for s in view.seats)
    winners = " & ".join(view.seats[s].display_name for s in view.match_result.winner_seats)
    for out in results:
        assert out.strip().endswith(f"match over: {winners} wins on points")
    lines = watched.splitlines()
    assert lines[0].startswith("[") and "snapshot" in lines[0]
    sequences = [int(line[1 : line.index("]")]) for line in lines[1:]]
    assert sequences == list(range(sequences[0], view.last_event_sequence + 1))
    assert f"match over: {winners} wins on points" in lines[-1]
    assert sum(" plays " in line for line in lines) >= 40  # the 40 cards of the hand


async def test_a_bot_refuses_an_unknown_level(address: str) -> None:
    proc = await _tute(address, "bot", "--level", "no-such-level", "--table", "x")
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert b"unknown level 'no-such-level'; known: " in err and b"random" in err
