"""``tute``: the terminal client of a tute server.

- ``tute play``: play in the terminal (Textual): against bots, by invite code, or from the
  lobby (no options: a menu); ``--ranked MODE`` queues for a ranked table first;
- ``tute watch TABLE``: a table as a spectator sees it, live (``--plain``: a line per event);
- ``tute tables``: the lobby;
- ``tute bot --level L --table T | --invite CODE``: a bot that takes a seat over gRPC like any
  client and plays it with the engine's bot of that level;
- ``tute verify FILE | --table T``: checks a finished match's record end to end (every deal
  against its commitment, then a replay of every action to the recorded results);
- ``tute replay FILE | --table T``: steps through a record hand by hand, as one seat saw it
  (``--seat``) or with every hand open.

Every command takes ``--server host:port`` (default ``localhost:50051``) and ``--tls``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from engine.record import MatchRecord, RecordError

from . import bot, records
from .errors import TuteError
from .sdk import DEFAULT_TARGET, SavedSeat, TuteClient
from .text import describe, match_line


def _client(args: argparse.Namespace) -> TuteClient:
    roots = Path(args.ca).read_bytes() if args.ca else None
    return TuteClient(args.server, tls=args.tls or roots is not None, root_certificates=roots)


def _load_tokens(path: str) -> dict[str, SavedSeat]:
    p = Path(path)
    if not p.exists():
        return {}
    data: dict[str, SavedSeat] = json.loads(p.read_text())
    return data


def _save_tokens(path: str, client: TuteClient) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(client.export_tokens(), indent=1))
    p.chmod(0o600)


def _load_players(path: str) -> dict[str, dict[str, str]]:
    p = Path(path)
    if not path or not p.exists():
        return {}
    data: dict[str, dict[str, str]] = json.loads(p.read_text())
    return data


async def _player_token(client: TuteClient, args: argparse.Namespace) -> str:
    """The player credential for ranked play: ``--player-token``, else $TUTE_PLAYER_TOKEN,
    else this server's guest in the player file (``--player-file``), else a new guest
    (CreatePlayer, named ``--name``) kept in that file (mode 0600: the token is a secret)."""
    given = args.player_token or os.environ.get("TUTE_PLAYER_TOKEN")
    if given:
        return str(given)
    path = getattr(args, "player_file", "")
    players = _load_players(path)
    kept = players.get(client.target, {}).get("player_token")
    if kept:
        return kept
    made = await client.create_player(getattr(args, "name", "") or "Jugador")
    print(f"new guest player {made.player.player_id} ({made.player.display_name})", flush=True)
    if path:
        players[client.target] = {
            "player_id": made.player.player_id,
            "player_token": made.player_token,
        }
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.touch(mode=0o600)
        p.chmod(0o600)
        p.write_text(json.dumps(players, indent=1))
    return str(made.player_token)


async def _find_match(client: TuteClient, args: argparse.Namespace) -> str:
    """Queue for a ranked table (printing the ticket's progress); the table's id, whose seat
    the client holds."""
    client.player_token = await _player_token(client, args)

    def progress(w: Any) -> None:
        print(
            f"queued for {args.ranked}: {w.queued} waiting, window +-{w.window}, "
            f"bots in {w.bots_in_s:.0f} s",
            flush=True,
        )

    matched = await client.find_match(args.ranked, on_progress=progress)
    print(f"matched: table {matched.table_id}, seat {matched.seat}", flush=True)
    return str(matched.table_id)


async def _play(args: argparse.Namespace) -> int:
    from .play import JoinTable, NewTable, PlayApp, Resume, Start

    client = _client(args)
    start: Start | None = None
    if args.tokens:
        client.import_tokens(_load_tokens(args.tokens))
    if args.table and args.table in client.seat_tokens:
        start = Resume(args.table)
    elif args.table or args.invite:
        start = JoinTable(
            table_id=args.table or "", invite_code=args.invite or "", seat=args.seat, name=args.name
        )
    elif args.preset:
        options = {"target_points": args.target_points} if args.target_points else {}
        start = NewTable(
            preset=args.preset,
            bot_level=args.bot_level,
            turn_time_s=args.turn_time,
            name=args.name,
            options=options,
        )
    try:
        await client.wait_ready(args.connect_timeout)
        if args.ranked:
            start = Resume(await _find_match(client, args))
    except TuteError as err:
        print(f"tute: {err}", file=sys.stderr)
        return 2
    app = PlayApp(client, start)
    try:
        await app.run_async()
    finally:
        if args.tokens:
            _save_tokens(args.tokens, client)
        await client.close()
    return 0


async def _watch(args: argparse.Namespace) -> int:
    client = _client(args)
    try:
        if not args.plain:
            from .play import PlayApp, Spectate

            await client.wait_ready(args.connect_timeout)
            await PlayApp(client, Spectate(args.table)).run_async()
            return 0
        async for update in client.watch(args.table, spectator=True):
            table = update.table
            if update.event is None:
                status = "finished" if table.finished else "playing" if table.playing else "waiting"
                print(
                    f"[{table.last_sequence}] snapshot: {table.players} players, {status}",
                    flush=True,
                )
            else:
                print(f"[{update.event.sequence}] {describe(table, update.event)}", flush=True)
            if table.finished and (args.until_over or update.event is None):
                return 0
        return 0
    except TuteError as err:
        print(f"tute: {err}", file=sys.stderr)
        return 1
    finally:
        await client.close()


async def _tables(args: argparse.Namespace) -> int:
    client = _client(args)
    try:
        tables = await client.lobby(preset=args.preset, players=args.players)
    except TuteError as err:
        print(f"tute: {err}", file=sys.stderr)
        return 1
    finally:
        await client.close()
    out = RichTable(title=f"tables waiting for players at {args.server}")
    for column in ("table", "preset", "players", "free", "seated", "turn time"):
        out.add_column(column)
    for t in tables:
        seated = ", ".join(s.display_name for s in t.seats if s.display_name)
        out.add_row(
            t.table_id,
            t.rules.preset or "custom",
            str(len(t.seats)),
            str(t.free_seats),
            seated,
            f"{t.rules.options.turn_time_s} s",
        )
    Console(width=120).print(out if tables else "no table is waiting for players")
    return 0


async def _bot(args: argparse.Namespace) -> int:
    if args.level not in bot.levels():
        print(
            f"tute bot: unknown level {args.level!r}; known: {', '.join(bot.levels())}",
            file=sys.stderr,
        )
        return 2
    client = _client(args)
    name = args.name or f"bot {args.level}"

    def log(line: str) -> None:
        if not args.quiet:
            print(f"{name}: {line}", flush=True)

    try:
        await client.wait_ready(args.connect_timeout)
        joined = await client.join_table(
            table_id=args.table or "",
            invite_code=args.invite or "",
            seat=args.seat,
            display_name=name,
        )
        log(f"sits at seat {joined.seat} of table {joined.table_id}")
        rng = random.Random(args.seed)
        table = await bot.play_seat(client, joined.table_id, args.level, rng, log)
        print(f"{name}: {match_line(table, table.view.match_result)}", flush=True)
        return 0
    except TuteError as err:
        print(f"tute bot: {err}", file=sys.stderr)
        return 1
    finally:
        await client.close()


async def _record(args: argparse.Namespace) -> MatchRecord:
    """The record named by ``args``: a file, or a table's from the server."""
    if args.file:
        return records.load(args.file)
    client = _client(args)
    try:
        await client.wait_ready(args.connect_timeout)
        record = records.record_from_proto(await client.get_match_record(table_id=args.table))
    finally:
        await client.close()
    if args.save:
        records.save(record, args.save)
    return record


def _record_args(cmd: argparse.ArgumentParser) -> None:
    source = cmd.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", default="", help="a record file (JSON)")
    source.add_argument("--table", default="", help="a table id: its record from the server")
    cmd.add_argument("--save", default="", help="with --table: also write the record here")


async def _verify(args: argparse.Namespace) -> int:
    try:
        record = await _record(args)
        _, lines = records.check(record)
    except RecordError as err:
        print(f"tute verify: the record does not verify: {err}", file=sys.stderr)
        return 1
    except TuteError as err:
        print(f"tute verify: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    print("verified")
    return 0


async def _replay(args: argparse.Namespace) -> int:
    try:
        record = await _record(args)
        steps, _ = records.check(record)
    except RecordError as err:
        print(
            f"tute replay: the record does not verify, so it is not shown: {err}", file=sys.stderr
        )
        return 1
    except TuteError as err:
        print(f"tute replay: {err}", file=sys.stderr)
        return 2
    if args.seat is not None and not 0 <= args.seat < record.rules.players:
        print(f"tute replay: no seat {args.seat} at this table", file=sys.stderr)
        return 2
    shown = -1
    for hand, line in records.replay_lines(record, steps, args.seat):
        if args.hand and hand != args.hand:
            continue
        if args.step and shown not in (hand, -1):
            input(f"-- end of hand {shown}; Enter for hand {hand} --")
        shown = hand
        print(line)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tute", description="The terminal client of a tute server.")
    p.add_argument("--server", default=DEFAULT_TARGET, help="host:port (default %(default)s)")
    p.add_argument("--tls", action="store_true", help="connect with TLS (the system's roots)")
    p.add_argument("--ca", default="", help="PEM file of the root certificates (implies --tls)")
    p.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        help="seconds to wait for the server at start (default %(default)s)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    play = sub.add_parser("play", help="play in the terminal")
    play.add_argument("--preset", default="", help="create a table of this preset against bots")
    play.add_argument("--bot-level", default="random", help="level of the server bots")
    play.add_argument("--turn-time", type=int, default=None, help="seconds per turn (0: no clock)")
    play.add_argument(
        "--target-points", type=int, default=0, help="points to win a game (shorter matches)"
    )
    play.add_argument(
        "--ranked",
        default="",
        choices=["", "2p", "3p", "4p"],
        metavar="MODE",
        help="queue for a ranked table of MODE (2p, 3p or 4p): the matchmaker seats you",
    )
    play.add_argument(
        "--player-token",
        default="",
        help="with --ranked: your player token or JWT (default $TUTE_PLAYER_TOKEN, else the "
        "guest kept in --player-file, else a new guest kept there)",
    )
    play.add_argument(
        "--player-file",
        default=str(Path.home() / ".config" / "tute" / "player.json"),
        help="where the guest player's token is kept, per server ('': nowhere)",
    )
    play.add_argument("--invite", default="", help="join a private table by its invite code")
    play.add_argument("--table", default="", help="join (or, with its token, go back to) a table")
    play.add_argument("--seat", type=int, default=None, help="the seat to take when joining")
    play.add_argument("--name", default="You", help="your name at the table")
    play.add_argument(
        "--tokens",
        default=str(Path.home() / ".config" / "tute" / "tokens.json"),
        help="where seat tokens are kept, to go back to a table ('' : nowhere)",
    )
    play.set_defaults(run=_play)

    watch = sub.add_parser("watch", help="watch a table as a spectator")
    watch.add_argument("table", help="table id")
    watch.add_argument("--plain", action="store_true", help="a line per event, no screen")
    watch.add_argument(
        "--until-over", action="store_true", help="with --plain: stop when the match ends"
    )
    watch.set_defaults(run=_watch)

    tables = sub.add_parser("tables", help="the lobby: public tables waiting for players")
    tables.add_argument("--preset", default="", help="only this preset")
    tables.add_argument("--players", type=int, default=0, help="only tables of 2, 3 or 4")
    tables.set_defaults(run=_tables)

    b = sub.add_parser("bot", help="a bot that takes a seat over gRPC and plays it")
    b.add_argument("--level", default="random", help="the engine bot: " + ", ".join(bot.levels()))
    target = b.add_mutually_exclusive_group(required=True)
    target.add_argument("--table", default="", help="table id (public tables)")
    target.add_argument("--invite", default="", help="invite code (private tables)")
    b.add_argument("--seat", type=int, default=None, help="the seat to take")
    b.add_argument("--name", default="", help="the name to show")
    b.add_argument("--seed", type=int, default=None, help="seed of the bot's random choices")
    b.add_argument("--quiet", action="store_true", help="print only the result")
    b.set_defaults(run=_bot)

    v = sub.add_parser("verify", help="check a finished match's record end to end")
    _record_args(v)
    v.set_defaults(run=_verify)

    r = sub.add_parser("replay", help="step through a finished match's record")
    _record_args(r)
    r.add_argument(
        "--seat",
        type=int,
        default=None,
        help="show the match as this seat saw it (default: every hand open)",
    )
    r.add_argument("--hand", type=int, default=0, help="only this hand")
    r.add_argument("--step", action="store_true", help="wait for Enter after each hand")
    r.set_defaults(run=_replay)
    return p


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        code = asyncio.run(args.run(args))
    except KeyboardInterrupt:
        code = 130
    raise SystemExit(code)
