"""End to end in headless Chromium: a person plays whole matches in the web client.

The server runs in the test's event loop and serves the built client (clients/web/dist, from
``make web-build``, which ``make test`` runs first) on its HTTP port; Playwright drives
Debian's ``chromium`` (``executable_path``, no browser download). The person clicks only
legal cards and sings whenever the table offers it; a click on a card that is not legal sends
nothing; a reload mid-match comes back to the same seat at the same point. Screenshots of the
lobby, a hand and the final score go to build/screenshots/ (docs/ holds a copy).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, Request, ViewportSize, async_playwright

from service.server import Server, create_server
from service.web import WebServer, bind
from tests.service.conftest import FAST

WEB = dataclasses.replace(FAST, http_port=0)

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "clients" / "web" / "dist"
SHOTS = ROOT / "build" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHONE: ViewportSize = {"width": 390, "height": 844}
STEP_MS = 30_000
"""How long one step of the match (our move answered by the server and the bots) may take."""

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    assert (DIST / "index.html").is_file(), "no built web client: run `make web-build` first"
    srv = await create_server(dataclasses.replace(WEB, web_dir=str(DIST)))
    try:
        yield srv
    finally:
        await srv.shutdown()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
async def page(browser: Browser, server: Server) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport=PHONE)
    p = await context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    await p.goto(f"http://127.0.0.1:{server.http_port}/")
    yield p
    await context.close()
    assert not errors, errors


async def create(page: Page, preset: str, bots: int, level: str = "random") -> str:
    await page.fill("#name", "Ana")
    await page.select_option("#preset", preset)
    await page.fill("#bots", str(bots))
    await page.select_option("#level", level)
    await page.click("#create-btn")
    await page.wait_for_selector("#table[data-status='en juego']", timeout=STEP_MS)
    return page.url.rpartition("/")[2]


async def seq(page: Page) -> int:
    return int(await page.get_attribute("#table", "data-seq") or -1)


async def wait_for_our_move_or_the_end(page: Page) -> str:
    """'final', 'declare' (a cante, tute or exchange is offered) or 'card'."""
    await page.wait_for_function(
        """() => document.querySelector('#final')
              || document.querySelector('#actions button.declare')
              || document.querySelector('#hand button.card.legal:not([disabled])')""",
        timeout=STEP_MS,
    )
    if await page.query_selector("#final"):
        return "final"
    if await page.query_selector("#actions button.declare"):
        return "declare"
    return "card"


async def act_and_wait(page: Page, selector: str) -> None:
    """Click ``selector`` and wait for the table to move past the current event."""
    before = await seq(page)
    await page.click(selector)
    await page.wait_for_function(
        f"() => Number(document.querySelector('#table').dataset.seq) > {before}",
        timeout=STEP_MS,
    )


@dataclasses.dataclass
class Played:
    cards: int = 0
    sung: int = 0
    illegal_clicks: int = 0
    hand_tops: set[int] = dataclasses.field(default_factory=set)
    """Where the hand was drawn (its top, in CSS pixels) at each of our moves."""


async def play_to_the_end(
    page: Page,
    submits: list[Request],
    *,
    reload_after: int | None = None,
    hand_shot: Path | None = None,
) -> Played:
    played = Played()
    while True:
        what = await wait_for_our_move_or_the_end(page)
        if what == "final":
            assert len(played.hand_tops) == 1, played.hand_tops  # the layout never moved
            return played
        box = await page.locator("#hand").bounding_box()
        assert box is not None
        played.hand_tops.add(round(box["y"]))
        if what == "declare":
            await act_and_wait(page, "#actions button.declare")
            played.sung += 1
            continue
        disabled = page.locator("#hand button.card[disabled]")
        if await disabled.count() and played.illegal_clicks < 3:
            # our turn, so the hand stays as it is until we act: click a card that is not
            # legal where it is drawn, as a person would; nothing happens, nothing is sent
            sent = len(submits)
            hand = await page.inner_text("#hand")
            box = await disabled.first.bounding_box()
            assert box is not None
            await page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            await page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(null)))")
            assert len(submits) == sent, "a click on a card that is not legal sent something"
            assert await page.inner_text("#hand") == hand
            assert await page.inner_text("#msg") == ""
            played.illegal_clicks += 1
        if hand_shot is not None and played.cards == 2:
            await page.screenshot(path=str(hand_shot))
        await act_and_wait(page, "#hand button.card.legal:not([disabled])")
        played.cards += 1
        if reload_after is not None and played.cards == reload_after:
            await reload_and_check(page)


async def reload_and_check(page: Page) -> None:
    """A reload comes back to the same seat, hand and point of the match."""
    # The hand and the event number read together: a bot's move (and a draw) may land between
    # two reads, so read again until no event arrived in between.
    for _ in range(100):
        before = await seq(page)
        hand = sorted(
            await page.locator("#hand button.card").evaluate_all(
                "els => els.map(e => e.getAttribute('aria-label'))"
            )
        )
        at = await seq(page)
        if at == before:
            break
    else:
        raise AssertionError("the table never held still between two reads")
    await page.reload()
    await page.wait_for_function(
        f"() => Number(document.querySelector('#table')?.dataset.seq) >= {at}", timeout=STEP_MS
    )
    assert "espectador" not in await page.inner_text("#title")
    again = sorted(
        await page.locator("#hand button.card").evaluate_all(
            "els => els.map(e => e.getAttribute('aria-label'))"
        )
    )
    if await seq(page) == at:
        assert again == hand
    assert await page.locator("#conn").inner_text() == "en directo"


def submissions(page: Page) -> list[Request]:
    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/SubmitAction") else None)
    return sent


async def test_a_person_plays_a_2p_match_against_a_bot_to_the_final_score(page: Page) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.wait_for_selector("#tables")
    await page.screenshot(path=str(SHOTS / "web-lobby.png"), full_page=True)
    submits = submissions(page)
    await create(page, "corriente-6", bots=1)
    names = await page.locator("#hand button.card").evaluate_all(
        "els => els.map(e => e.getAttribute('aria-label'))"
    )
    assert len(names) == 6 and all(" de " in n for n in names), names  # "3 de espadas"
    played = await play_to_the_end(page, submits, reload_after=3, hand_shot=SHOTS / "web-hand.png")
    final = await page.inner_text("#final")
    assert final.startswith("Partida terminada"), final
    assert ("Has ganado" in final) != ("Has perdido" in final)
    await page.screenshot(path=str(SHOTS / "web-final.png"), full_page=True)
    assert played.cards >= 6
    assert len(submits) == played.cards + played.sung  # nothing else was ever sent


async def test_a_4p_table_with_3_bots_plays_to_the_end(page: Page) -> None:
    submits = submissions(page)
    await create(page, "parejas", bots=3, level="easy")
    assert await page.locator("#seats .seat").count() == 4
    played = await play_to_the_end(page, submits)
    assert played.illegal_clicks > 0  # following suit disables cards from the first trick
    assert (await page.inner_text("#final")).startswith("Partida terminada")
    assert len(submits) == played.cards + played.sung


async def test_keyboard_plays_a_card_and_focus_is_visible(page: Page) -> None:
    await create(page, "corriente-6", bots=1)
    await wait_for_our_move_or_the_end(page)
    before = await seq(page)
    first = page.locator("#hand button.card:not([disabled])").first
    await first.focus()
    await page.keyboard.press("ArrowRight")  # the next legal card, focused from the keyboard
    label = await page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert label and " de " in label
    outline = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"  # the focus is visible
    await page.keyboard.press("Enter")
    await page.wait_for_function(
        f"() => Number(document.querySelector('#table').dataset.seq) > {before}", timeout=STEP_MS
    )
    log = await page.locator("#log").text_content() or ""
    assert f"Ana juega {label}" in log


async def test_a_spectator_follows_a_table_by_its_id(page: Page, browser: Browser) -> None:
    table_id = await create(page, "corriente-6", bots=1)
    other = await browser.new_page(viewport=PHONE)
    try:
        await other.goto(page.url.replace(f"#/t/{table_id}", "") + f"#/t/{table_id}")
        await other.wait_for_selector("#table[data-status='en juego']", timeout=STEP_MS)
        assert "espectador" in await other.inner_text("#title")
        assert await other.locator("#hand button.card").count() == 0  # no hidden card shown
    finally:
        await other.close()


async def test_an_invite_link_opens_the_join_screen(page: Page, browser: Browser) -> None:
    await page.fill("#name", "Ana")
    await page.select_option("#preset", "corriente-6")
    await page.fill("#bots", "0")
    await page.check("#private")
    await page.click("#create-btn")
    link = await page.wait_for_selector("#invite-link", timeout=STEP_MS)
    assert link is not None
    href = await link.get_attribute("href")
    assert href and "#/join/" in href
    guest = await browser.new_page(viewport=PHONE)
    try:
        await guest.goto(href)
        await guest.fill("#name", "Bea")
        await guest.click("#join button")
        await guest.wait_for_selector("#table[data-status='en juego']", timeout=STEP_MS)
        await page.wait_for_selector("#table[data-status='en juego']", timeout=STEP_MS)
        assert "Bea" in await page.inner_text("#seats")
    finally:
        await guest.close()


async def test_a_refused_action_shows_the_servers_reason(page: Page) -> None:
    base = page.url.partition("#")[0]
    await page.goto(f"{base}#/join/ZZZZZZZZ")
    await page.click("#join button")
    await page.wait_for_function("document.querySelector('#msg').textContent !== ''")
    assert "INVITE_NOT_FOUND" in await page.inner_text("#msg")


async def test_a_lost_stream_resumes_without_a_reload(page: Page, server: Server) -> None:
    await create(page, "corriente-6", bots=1)
    await wait_for_our_move_or_the_end(page)
    at = await seq(page)
    # The HTTP port goes away under the page (its stream is cut) and comes back on the same
    # port: the page reconnects by itself, resuming with resume_after, with no reload.
    assert server.web is not None
    app, port = server.web.app, server.http_port
    await server.web.stop()
    await page.wait_for_function(
        "document.querySelector('#conn').dataset.state === 'reconnecting'", timeout=STEP_MS
    )
    server.web = WebServer(app, bind("127.0.0.1", port), FAST.grace_s)
    await server.web.start()
    # Our card makes the bot answer: both reach the page over the resumed stream.
    await page.click("#hand button.card.legal:not([disabled])")
    await page.wait_for_function(
        "document.querySelector('#conn').dataset.state === 'live'", timeout=STEP_MS
    )
    seen_after = f"n => n > {at} + 1"
    await page.wait_for_function(
        f"() => [...document.querySelectorAll('#log li')].map(li => parseInt(li.textContent))"
        f".some({seen_after})",
        timeout=STEP_MS,
    )
    logged = [int(t.partition(":")[0]) for t in await page.locator("#log li").all_text_contents()]
    assert logged == list(range(logged[0], logged[-1] + 1)), logged  # every event once, in order
    assert logged[-1] > at
