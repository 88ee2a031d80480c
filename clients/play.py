"""``tute play`` and ``tute watch``: the table in the terminal, built with Textual.

The screen, top to bottom: the table line (id, rules, hand, connection), the other seats
(cards held, public cards, tricks, who is on turn), the trump card and the stock beside the
current trick (or the last trick, on demand), the scores per side, whose turn it is with the
clock counting down, the caller's hand drawn as cards in the colours of the Spanish suits
(oros gold, copas red, espadas blue, bastos green; the cards that may be played now bright,
the others dimmed), the declarations allowed now as buttons, and a log line for each event
(and for each refusal, with the server's reason).

Keys: ``1``-``9``, ``0`` play the card at that place; ``←`` ``→`` choose and ``enter`` plays;
``c`` sings, ``t`` declares tute, ``x`` exchanges the trump card; ``l`` shows the last trick;
``q`` quits. Cards and buttons can be clicked. The app plays only from its stream
(:meth:`clients.sdk.TuteClient.watch`), which resumes by itself after a lost connection.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, DataTable, Footer, Input, Label, RichLog, Static

from tute.v1 import action_pb2, card_pb2, rules_pb2, table_pb2

from .cards import (
    SUIT_COLOURS,
    SUIT_NAMES,
    SUIT_SYMBOLS,
    action_name,
    card_text,
    same_card,
)
from .errors import TuteError
from .sdk import TuteClient, Update
from .table import Table
from .text import describe, match_line, plural, score_line, side_name

PRESETS = (
    "corriente-6",
    "corriente-8",
    "corriente-juegos",
    "tres",
    "parejas",
    "parejas-manos",
    "parejas-mejor-de-3",
)
"""The rules presets of RULES.md §13 (the server says so if it knows others or fewer)."""

MAX_HAND = 13
_DIM = "#5c5c5c"
_SHORT_RANK = {1: "As", 10: "Sota", 11: "Cab", 12: "Rey"}


# -------------------------------------------------------------------------------------------
# What to play
# -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NewTable:
    """Create a table, take a seat and fill the others with server bots."""

    preset: str = "corriente-6"
    bot_level: str = "random"
    turn_time_s: int | None = None
    name: str = "You"
    options: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class JoinTable:
    """Take a seat at a table by id (public) or invite code (private)."""

    table_id: str = ""
    invite_code: str = ""
    seat: int | None = None
    name: str = "You"


@dataclasses.dataclass(frozen=True)
class Resume:
    """Go back to a seat whose token the client already holds."""

    table_id: str


@dataclasses.dataclass(frozen=True)
class Spectate:
    """Watch a table without a seat."""

    table_id: str


Start = NewTable | JoinTable | Resume | Spectate


# -------------------------------------------------------------------------------------------
# Widgets
# -------------------------------------------------------------------------------------------


def card_face(c: card_pb2.Card) -> Text:
    """The inside of a drawn card (3 lines of 5 cells): rank and suit symbol."""
    symbol = SUIT_SYMBOLS.get(c.suit, "?")
    rank = str(c.rank)
    middle = _SHORT_RANK.get(c.rank, symbol).center(5)
    return Text(f"{rank:<3}{symbol} \n{middle}\n {symbol}{rank:>3}")


class CardWidget(Static):
    """One card: a small box in its suit's colour (dimmed when it may not be played)."""

    DEFAULT_CSS = """
    CardWidget {
        width: 7;
        height: 5;
        border: round $panel;
        padding: 0;
    }
    """

    class Chosen(Message):
        """The card was clicked."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, index: int, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.index = index
        self.display = False
        self._shown: tuple[object, ...] = ()

    def show(
        self,
        c: card_pb2.Card,
        *,
        bright: bool = True,
        selected: bool = False,
        title: str = "",
        subtitle: str = "",
    ) -> None:
        key = (int(c.suit), c.rank, bright, selected, title, subtitle)
        if key == self._shown and self.display:
            return
        self._shown = key
        colour = SUIT_COLOURS.get(c.suit, "white") if bright else _DIM
        face = card_face(c)
        face.stylize(f"bold {colour}" if bright else colour)
        self.update(face, layout=False)
        self.styles.border = ("double" if selected else "round", "white" if selected else colour)
        self.set_class(not bright, "dim")
        self.set_class(selected, "selected")
        self.border_title = title
        self.border_subtitle = subtitle
        self.tooltip = card_text(c)
        if not self.display:
            self.display = True

    def hide(self) -> None:
        if self.display:
            self.display = False

    def on_click(self) -> None:
        self.post_message(self.Chosen(self.index))


def _set(widget: Static, content: str | Text, *, layout: bool = True) -> None:
    """Update a widget's content only when it changed (redrawing is what costs)."""
    if getattr(widget, "_tute_shown", None) != content:
        widget._tute_shown = content  # type: ignore[attr-defined]  # noqa: SLF001 - our own mark on the widget
        widget.update(content, layout=layout)


def _show(widget: Widget, shown: bool) -> None:
    if widget.display != shown:
        widget.display = shown


class TableScreen(Vertical):
    """The whole table for one model: everything but the log and the footer."""

    DEFAULT_CSS = """
    TableScreen { height: auto; }
    #top { height: 1; background: $boost; }
    #seats { height: auto; padding: 0 1; }
    #middle { height: 8; }
    #trump-box { width: 28; height: 8; border: round $panel; padding: 0 1; }
    #trump-card { margin: 0 1 0 0; }
    #trump-text { width: 1fr; }
    #trick-box { width: 1fr; height: 8; border: round $panel; padding: 0 1; }
    .played { width: 10; height: 6; }
    .played Label { width: 9; }
    #scores { height: auto; padding: 0 1; }
    #turn { height: 1; padding: 0 1; text-style: bold; }
    #result { height: auto; padding: 0 1; text-style: bold; color: $success; display: none; }
    #hand { height: 6; padding: 0 1; }
    #hand-empty { height: 5; padding: 1 1; color: $text-muted; }
    #actions { height: 3; }
    #actions Button { margin: 0 1 0 0; min-width: 10; }
    """

    def __init__(self) -> None:
        super().__init__(id="table")
        self.show_last = False

    def compose(self) -> ComposeResult:
        yield Static("", id="top")
        yield Static("", id="seats")
        with Horizontal(id="middle"):
            with Horizontal(id="trump-box"):
                yield CardWidget(-1, id="trump-card")
                yield Static("", id="trump-text")
            with Horizontal(id="trick-box"):
                for i in range(4):
                    with Vertical(classes="played", id=f"played-{i}"):
                        yield CardWidget(-1, id=f"trick-{i}")
                        yield Label("", id=f"trick-name-{i}")
        yield Static("", id="scores")
        yield Static("", id="turn")
        yield Static("", id="result")
        with Horizontal(id="hand"):
            yield Static("", id="hand-empty")
            for i in range(MAX_HAND):
                yield CardWidget(i, id=f"card-{i}")
        with Horizontal(id="actions"):
            for suit in (1, 2, 3, 4):
                yield Button("", id=f"sing-{suit}", variant="warning")
            yield Button("Tute de reyes (t)", id="tute-12", variant="error")
            yield Button("Tute de caballos (t)", id="tute-11", variant="error")
            yield Button("Exchange the trump card (x)", id="exchange", variant="primary")

    def on_mount(self) -> None:
        for button in self.query(Button):
            button.display = False
            button.can_focus = False  # keys go to the app's bindings (c, t, x)

    def render_table(self, table: Table, selected: int, connection: str, clock: float) -> None:
        """Redraw from the model."""
        v = table.view
        me = table.my_seat
        rules = v.rules.preset or "custom rules"
        where = f"hand {v.hand_number}" + (f" · game {v.game_number}" if v.game_number > 1 else "")
        top = f" tute · table {v.table_id} · {rules} · {where}"
        if v.invite_code:
            top += f" · invite {v.invite_code}"
        _set(self.query_one("#top", Static), f"{top} · {connection}")
        self._render_seats(table)
        self._render_trump(table)
        self._render_trick(table)
        _set(
            self.query_one("#scores", Static),
            "\n".join(score_line(table, s) for s in range(len(v.scores))),
        )
        _set(self.query_one("#turn", Static), turn_line(table, clock))
        result = self.query_one("#result", Static)
        if table.finished and v.HasField("match_result"):
            _set(result, final_score(table))
            _show(result, True)
        else:
            _show(result, False)
        self._render_hand(table, selected)
        self._render_actions(table)
        if me is None:
            _set(self.query_one("#hand-empty", Static), "(spectating: no hand)")

    def _render_seats(self, table: Table) -> None:
        v = table.view
        lines = []
        hands = {h.seat: h for h in v.seat_hands}
        for seat in v.seats:
            mark = "▶" if table.turn_seat == seat.index else " "
            if seat.index == table.my_seat:
                mine = hands.get(seat.index)
                tricks = f" · {plural(mine.tricks_won, 'trick')}" if mine is not None else ""
                me = "You" if seat.display_name.lower() == "you" else f"{seat.display_name} (you"
                me += f", seat {seat.index})" if me != "You" else f" (seat {seat.index})"
                lines.append(Text(f"{mark} ● {me}{tricks}", style="bold" if mark == "▶" else ""))
                continue
            if seat.occupant == table_pb2.OCCUPANT_KIND_EMPTY:
                lines.append(Text(f"{mark} seat {seat.index}: (free)", style="dim"))
                continue
            who = seat.display_name or f"seat {seat.index}"
            kind = (
                f" (bot {seat.bot_level})" if seat.bot_level and seat.bot_level not in who else ""
            )
            dot = "●" if seat.connected else "○"
            line = Text(
                f"{mark} {dot} {who}{kind}, seat {seat.index}", style="bold" if mark == "▶" else ""
            )
            h = hands.get(seat.index)
            if h is not None:
                line.append(f"  {'▮' * h.hand_size} {h.hand_size} cards", style="cyan")
                if h.public_cards:
                    line.append("  shows ")
                    line.append_text(cards_text(h.public_cards))
                line.append(f"  · {plural(h.tricks_won, 'trick')}")
            lines.append(line)
        _set(self.query_one("#seats", Static), Text("\n").join(lines) if lines else "")

    def _render_trump(self, table: Table) -> None:
        v = table.view
        widget = self.query_one("#trump-card", CardWidget)
        text = self.query_one("#trump-text", Static)
        if not v.trump_suit:
            widget.hide()
            _set(text, "no deal yet")
            return
        suit = Text(
            f"trump: {SUIT_NAMES.get(v.trump_suit, '?')}",
            style=f"bold {SUIT_COLOURS.get(v.trump_suit, 'white')}",
        )
        if v.HasField("turned_card"):
            widget.show(v.turned_card)
            _set(text, Text("\n").join([suit, Text("turned card"), Text(f"stock: {v.stock_size}")]))
        elif len(v.seats) == 2:
            widget.hide()
            _set(text, Text("\n").join([suit, Text("stock: empty")]))
        else:
            widget.show(v.trump_card)
            holder = next(
                (
                    h.seat
                    for h in v.seat_hands
                    if any(same_card(c, v.trump_card) for c in h.public_cards)
                ),
                None,
            )
            held = f"held by {table.seat_name(holder)}" if holder is not None else "played"
            _set(text, Text("\n").join([suit, Text(held)]))

    def _render_trick(self, table: Table) -> None:
        v = table.view
        box = self.query_one("#trick-box", Horizontal)
        last = table.last_trick
        if self.show_last and last is not None:
            cards = list(last.cards)
            box.border_title = f"last trick: {last.number}, won by {table.seat_name(last.winner)}"
        else:
            cards = list(v.current_trick.cards)
            box.border_title = (
                f"trick {v.current_trick.number}" if v.HasField("current_trick") else "trick"
            )
        box.border_subtitle = "l: last trick" if last is not None else ""
        for i in range(4):
            slot = self.query_one(f"#played-{i}", Vertical)
            _show(slot, i < len(cards))
            if i < len(cards):
                played = cards[i]
                name = table.seat_name(played.seat)
                self.query_one(f"#trick-{i}", CardWidget).show(played.card)
                _set(
                    self.query_one(f"#trick-name-{i}", Label),
                    ("⏱" if played.timed_out else "")
                    + (name if len(name) <= 9 else name[:8] + "…"),
                )

    def _render_hand(self, table: Table, selected: int) -> None:
        hand = list(table.hand)
        legal = table.legal_cards
        empty = self.query_one("#hand-empty", Static)
        _show(empty, not hand)
        if not hand:
            _set(empty, "(no cards)" if table.my_seat is not None else "")
        for i in range(MAX_HAND):
            widget = self.query_one(f"#card-{i}", CardWidget)
            if i < len(hand):
                c = hand[i]
                bright = any(same_card(c, x) for x in legal) or not table.legal_actions
                title = str((i + 1) % 10) if i < 10 else ""
                widget.show(c, bright=bright, selected=i == selected and bool(legal), title=title)
            else:
                widget.hide()

    def _render_actions(self, table: Table) -> None:
        offered: dict[str, action_pb2.Action] = {}
        for a in table.legal_actions:
            kind = a.WhichOneof("kind")
            if kind == "sing":
                offered[f"sing-{int(a.sing)}"] = a
            elif kind == "declare_tute":
                offered[f"tute-{a.declare_tute.rank}"] = a
            elif kind == "exchange_trump":
                offered["exchange"] = a
        trump = table.view.trump_suit
        for button in self.query(Button):
            bid = button.id or ""
            _show(button, bid in offered)
            if bid.startswith("sing-") and bid in offered:
                suit = int(bid.split("-")[1])
                points = 40 if suit == trump else 20
                button.label = f"Sing las {points} in {SUIT_NAMES.get(suit, '?')} (c)"


def cards_text(cards: Iterable[card_pb2.Card]) -> Text:
    """Cards inline, each in its suit's colour: ``12C 11C``."""
    out = Text()
    for i, c in enumerate(cards):
        if i:
            out.append(" ")
        out.append(
            card_text(c) + SUIT_SYMBOLS.get(c.suit, ""),
            style=f"bold {SUIT_COLOURS.get(c.suit, 'white')}",
        )
    return out


def turn_line(table: Table, clock: float) -> str:
    """``Your turn · 12 s left`` / ``Bob to play`` / the result line."""
    if table.finished:
        return match_line(table, table.view.match_result)
    seat = table.turn_seat
    if not table.playing or seat is None:
        free = sum(1 for s in table.view.seats if s.occupant == table_pb2.OCCUPANT_KIND_EMPTY)
        return f"waiting for players ({free} free seats)" if table.view.seats else "connecting"
    who = "Your turn" if table.my_turn else f"{table.seat_name(seat)} to play"
    if table.my_turn and table.legal_actions:
        kind = table.view.turn_kind
        who += ": lead a card" if kind == table_pb2.TURN_KIND_LEAD else ": follow"
    deadline = table.deadline
    if deadline is None:
        return who
    left = max(0, int(deadline - clock + 0.999))
    return f"{who} · {left} s left"


def final_score(table: Table) -> str:
    """The final standing: ``Match over: Ana wins on points`` and each side's score."""
    v = table.view
    lines = [match_line(table, v.match_result).replace("match over", "Match over", 1)]
    for s in v.match_result.scores:
        if v.rules.options.scoring == rules_pb2.SCORING_HANDS:
            lines.append(f"  {side_name(table, s.side)}: {s.match_points} match points")
        else:
            games = f", {s.games_won} games" if v.rules.options.games_to_win > 1 else ""
            lines.append(f"  {side_name(table, s.side)}: {s.game_score} points{games}")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------
# The menu
# -------------------------------------------------------------------------------------------


class MenuScreen(Screen[Start]):
    """Create a table against bots, join one by invite code, or pick one from the lobby."""

    DEFAULT_CSS = """
    MenuScreen { align: center top; }
    #menu { width: 80; height: auto; padding: 1 2; }
    #menu Input { width: 40; }
    #menu Label { margin: 1 0 0 0; }
    #lobby { height: 10; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.quit", "quit")]

    def __init__(self, client: TuteClient, name: str = "You") -> None:
        super().__init__()
        self.client = client
        self.player_name = name

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="menu"):
            yield Label("Your name")
            yield Input(self.player_name, id="name")
            yield Label("Against bots: preset (" + ", ".join(PRESETS) + ")")
            yield Input("corriente-6", id="preset")
            yield Label("Bot level, and turn time in seconds (0: no clock)")
            with Horizontal(classes="row"):
                yield Input("random", id="level")
                yield Input("30", id="turn-time")
            yield Button("Play against bots", id="new", variant="success")
            yield Label("Join a private table by its invite code")
            yield Input("", id="invite", placeholder="ABCD2345")
            yield Button("Join", id="join")
            yield Label("Or pick a table of the lobby (enter)")
            yield DataTable(id="lobby", cursor_type="row")
            yield Button("Refresh the lobby", id="refresh")
            yield Static("", id="menu-error")

    async def on_mount(self) -> None:
        lobby = self.query_one("#lobby", DataTable)
        lobby.add_columns("table", "preset", "players", "free seats", "seated")
        await self.refresh_lobby()

    async def refresh_lobby(self) -> None:
        lobby = self.query_one("#lobby", DataTable)
        lobby.clear()
        try:
            tables = await self.client.lobby()
        except TuteError as err:
            _set(self.query_one("#menu-error", Static), f"lobby: {err}")
            return
        for t in tables:
            names = ", ".join(s.display_name for s in t.seats if s.display_name)
            lobby.add_row(
                t.table_id,
                t.rules.preset or "custom",
                str(len(t.seats)),
                str(t.free_seats),
                names,
                key=t.table_id,
            )

    def _value(self, wid: str) -> str:
        return self.query_one(f"#{wid}", Input).value.strip()

    @on(Button.Pressed, "#new")
    def new_table(self) -> None:
        turn = self._value("turn-time")
        self.dismiss(
            NewTable(
                preset=self._value("preset") or "corriente-6",
                bot_level=self._value("level") or "random",
                turn_time_s=int(turn) if turn.isdigit() else None,
                name=self._value("name") or "You",
            )
        )

    @on(Button.Pressed, "#join")
    def join_invite(self) -> None:
        code = self._value("invite")
        if code:
            self.dismiss(JoinTable(invite_code=code, name=self._value("name") or "You"))

    @on(Button.Pressed, "#refresh")
    async def refresh_pressed(self) -> None:
        await self.refresh_lobby()

    @on(DataTable.RowSelected, "#lobby")
    def join_listed(self, event: DataTable.RowSelected) -> None:
        table_id = event.row_key.value
        if table_id:
            self.dismiss(JoinTable(table_id=str(table_id), name=self._value("name") or "You"))


# -------------------------------------------------------------------------------------------
# The app
# -------------------------------------------------------------------------------------------


class PlayApp(App[None]):
    """The terminal client. ``start`` says what to do (``None``: show the menu, unless
    ``menu`` is false: then only :meth:`show` draws a table)."""

    TITLE = "tute"
    CSS = """
    #log { height: 1fr; min-height: 5; border: round $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "move(-1)", "←", show=False),
        Binding("right", "move(1)", "→", show=False),
        Binding("enter", "play_selected", "play"),
        *(Binding(str(d), f"play_place({(d - 1) % 10})", show=False) for d in range(10)),
        Binding("c", "declare('sing')", "sing"),
        Binding("t", "declare('declare_tute')", "tute"),
        Binding("x", "declare('exchange_trump')", "exchange"),
        Binding("l", "toggle_last", "last trick"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        client: TuteClient,
        start: Start | None = None,
        *,
        clock: Callable[[], float] = time.time,
        tick_s: float = 0.5,
        menu: bool = True,
    ) -> None:
        super().__init__()
        self.client = client
        self.start = start
        self.menu = menu
        self.clock = clock
        self.tick_s = tick_s
        self.table: Table | None = None
        self.table_id = ""
        self.selected = 0
        self.connection = "connecting"
        self.log_lines: list[str] = []
        """Every line of the log, oldest first."""
        self.changed = asyncio.Event()
        """Set whenever the model or the log changes (tests wait on it)."""
        self.submitting = False
        """True while an action is on its way to the server."""
        self._redraw_pending = False
        client.on_retry = self._lost

    def compose(self) -> ComposeResult:
        yield TableScreen()
        log = RichLog(id="log", wrap=True, markup=False)
        log.can_focus = False  # the arrow keys move along the hand
        yield log
        yield Footer()

    async def on_mount(self) -> None:
        self.set_interval(self.tick_s, self.tick)
        if self.start is not None:
            self._chosen(self.start)
        elif self.menu:
            self.push_screen(MenuScreen(self.client), self._chosen)

    def _chosen(self, start: Start | None) -> None:
        if start is not None:
            self.run_worker(self._run(start), name="table", exclusive=True)

    # -- the stream ------------------------------------------------------------------------
    async def _open(self, start: Start) -> tuple[str, bool]:
        """Create or join as ``start`` says: the table id, and whether we are a spectator."""
        client = self.client
        if isinstance(start, NewTable):
            options = dict(start.options)
            if start.turn_time_s is not None:
                options["turn_time_s"] = start.turn_time_s
            created = await client.create_table(
                preset=start.preset,
                options=options or None,
                take_seat=True,
                display_name=start.name,
            )
            for _ in range(len(created.table.seats) - 1):
                await client.add_bot(table_id=created.table_id, level=start.bot_level)
            self.say(f"table {created.table_id} created; you sit at seat {created.seat}")
            return created.table_id, False
        if isinstance(start, JoinTable):
            joined = await client.join_table(
                table_id=start.table_id,
                invite_code=start.invite_code,
                seat=start.seat,
                display_name=start.name,
            )
            self.say(f"you sit at seat {joined.seat} of table {joined.table_id}")
            return joined.table_id, False
        if isinstance(start, Resume):
            self.say(f"back at table {start.table_id}")
            return start.table_id, False
        self.say(f"watching table {start.table_id}")
        return start.table_id, True

    async def _run(self, start: Start) -> None:
        try:
            self.table_id, spectator = await self._open(start)
            async for update in self.client.watch(self.table_id, spectator=spectator):
                self._update(update)
        except TuteError as err:
            self.say(f"✗ {err}", style="bold red")

    def _update(self, update: Update) -> None:
        table = update.table
        if self.connection != "connected":
            if self.connection.startswith("connection lost"):
                self.say(
                    f"connection back: resumed after event {table.last_sequence - 1}"
                    if update.event is not None
                    else "connection back: a fresh snapshot"
                )
            self.connection = "connected"
        if update.event is not None and update.kind != "turn_started":
            self.say(describe(table, update.event))
        self.show(table)

    def show(self, table: Table) -> None:
        """Draw ``table`` (the cursor stays on a card that may be played)."""
        self.table = table
        hand = list(table.hand)
        legal = table.legal_cards
        self.selected = min(self.selected, max(0, len(hand) - 1))
        if legal and not (hand and any(same_card(hand[self.selected], c) for c in legal)):
            # keep the cursor on a card that may be played
            self.selected = next(
                (i for i, c in enumerate(hand) if any(same_card(c, x) for x in legal)), 0
            )
        self._redraw()

    def _lost(self, err: TuteError, delay: float) -> None:
        self.connection = f"connection lost ({err.reason or err.code.name}), retrying"
        self.say(f"{self.connection} in {delay:.1f} s", style="yellow")
        self._redraw()

    def _redraw(self) -> None:
        """Redraw soon: the events of one change arrive together and are drawn once."""
        if not self._redraw_pending:
            self._redraw_pending = True
            self.call_later(self._draw)
        self.changed.set()

    def _draw(self) -> None:
        self._redraw_pending = False
        if self.table is not None:
            self.query_one(TableScreen).render_table(
                self.table, self.selected, self.connection, self.clock()
            )
        self.changed.set()

    def tick(self) -> None:
        """Count the turn clock down (every ``tick_s``), while the table is on screen."""
        if self.table is not None and self.table.deadline is not None:
            for turn in self.query("#turn").results(Static):
                _set(turn, turn_line(self.table, self.clock()))

    def say(self, line: str, style: str = "") -> None:
        """Add a line to the log."""
        self.log_lines.append(line)
        self.query_one("#log", RichLog).write(Text(line, style=style))
        self.changed.set()

    # -- acting ----------------------------------------------------------------------------
    def submit(self, action: action_pb2.Action) -> None:
        """Send an action (the server judges it; a refusal is logged with its reason)."""
        if self.table is None or self.table.my_seat is None or self.submitting:
            return
        self.submitting = True
        self.run_worker(self._submit(action), group="submit")

    async def _submit(self, action: action_pb2.Action) -> None:
        try:
            await self.client.submit(table_id=self.table_id, action=action)
        except TuteError as err:
            self.say(
                f"✗ {action_name(action)} refused: {err.reason or err.code.name}: {err.message}",
                style="bold red",
            )
        finally:
            self.submitting = False
            self.changed.set()

    def _play_index(self, index: int) -> None:
        if self.table is None or not 0 <= index < len(self.table.hand):
            return
        self.selected = index
        self._redraw()
        self.submit(action_pb2.Action(play_card=self.table.hand[index]))

    def action_move(self, step: int) -> None:
        if self.table is not None and self.table.hand:
            self.selected = (self.selected + step) % len(self.table.hand)
            self._redraw()

    def action_play_selected(self) -> None:
        self._play_index(self.selected)

    def action_play_place(self, index: int) -> None:
        self._play_index(index)

    def action_declare(self, kind: str) -> None:
        if self.table is None:
            return
        for a in self.table.legal_actions:
            if a.WhichOneof("kind") == kind:
                self.submit(a)
                return
        self.say(f"nothing to {kind.replace('_', ' ')} now", style="dim")

    def action_toggle_last(self) -> None:
        screen = self.query_one(TableScreen)
        screen.show_last = not screen.show_last
        self._redraw()

    @on(CardWidget.Chosen)
    def card_clicked(self, message: CardWidget.Chosen) -> None:
        if message.index >= 0:
            self._play_index(message.index)

    @on(Button.Pressed)
    def button_pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        if self.table is None:
            return
        for a in self.table.legal_actions:
            kind = a.WhichOneof("kind")
            if (
                (kind == "sing" and bid == f"sing-{int(a.sing)}")
                or (kind == "declare_tute" and bid == f"tute-{a.declare_tute.rank}")
                or (kind == "exchange_trump" and bid == "exchange")
            ):
                self.submit(a)
                return


__all__ = ["JoinTable", "NewTable", "PlayApp", "Resume", "Spectate", "Start"]
