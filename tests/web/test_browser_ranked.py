"""End to end in headless Chromium: "play ranked" in the web client (CreatePlayer, FindMatch,
WatchTicket).

Two people (two browser contexts, so two guest players) search a 2p ranked match: the lobby
shows each ticket's progress, the matcher seats them together, and each page lands on the
table in its own seat with its hand. A search cancelled from the lobby closes its ticket's
stream and says so.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page

from service.server import Server, create_server
from tests.web.test_browser import DIST, PHONE, STEP_MS, WEB
from tests.web.test_browser import browser as browser  # noqa: PLC0414 - the shared fixture

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    assert (DIST / "index.html").is_file(), "no built web client: run `make web-build` first"
    settings = dataclasses.replace(WEB, web_dir=str(DIST), matchmaking_poll_s=0.05)
    srv = await create_server(settings)
    try:
        yield srv
    finally:
        await srv.shutdown()


async def _lobby(browser: Browser, server: Server) -> Page:
    context = await browser.new_context(viewport=PHONE)
    page = await context.new_page()
    await page.goto(f"http://127.0.0.1:{server.http_port}/")
    await page.wait_for_selector("#ranked-btn")
    return page


async def test_two_people_searching_a_ranked_match_are_seated_together(
    browser: Browser, server: Server
) -> None:
    pages = [await _lobby(browser, server), await _lobby(browser, server)]
    try:
        tokens = [await p.evaluate("() => localStorage.getItem('tute.player')") for p in pages]
        assert tokens == [None, None]  # no player yet: the first search makes one
        await pages[0].select_option("#ranked-mode", "2p")
        await pages[0].click("#ranked-btn")
        await pages[0].wait_for_function(
            "() => document.querySelector('#ranked-status').textContent.includes('en la cola')",
            timeout=STEP_MS,
        )
        assert await pages[0].is_visible("#ranked-cancel")
        await pages[1].select_option("#ranked-mode", "2p")
        await pages[1].click("#ranked-btn")
        await asyncio.gather(
            *(p.wait_for_selector("#table[data-status='en juego']", timeout=STEP_MS) for p in pages)
        )
        tables = {p.url.rpartition("/")[2] for p in pages}
        assert len(tables) == 1  # the same table
        tokens = [await p.evaluate("() => localStorage.getItem('tute.player')") for p in pages]
        assert all(tokens) and tokens[0] != tokens[1]
        ids = [await p.evaluate("() => localStorage.getItem('tute.player.id')") for p in pages]
        for pid in ids:  # guests the server made (CreatePlayer), named as the lobby says
            player = await server.app.players.get(pid)
            assert player is not None and player.name == "Invitado"
        for p in pages:
            assert "espectador" not in await p.inner_text("#title")
            await p.wait_for_function(
                "() => document.querySelectorAll('#hand button.card').length === 8",
                timeout=STEP_MS,
            )
        mine = [await p.locator("#seats .seat.me").get_attribute("data-seat") for p in pages]
        assert sorted(m or "" for m in mine) == ["0", "1"]
        # back in the lobby, the guest's standing (GetPlayer): new, provisional, in every mode
        await pages[0].goto(f"http://127.0.0.1:{server.http_port}/")
        await pages[0].wait_for_function(
            "() => document.querySelector('#ranked-rating').textContent.includes('4p 1500?')",
            timeout=STEP_MS,
        )
        assert (await pages[0].inner_text("#ranked-rating")).startswith("Invitado: 2p 1500?")
    finally:
        for p in pages:
            await p.context.close()


async def test_a_ranked_search_is_cancelled_from_the_lobby(
    browser: Browser, server: Server
) -> None:
    page = await _lobby(browser, server)
    try:
        await page.select_option("#ranked-mode", "4p")
        await page.click("#ranked-btn")
        await page.wait_for_function(
            "() => document.querySelector('#ranked-status').textContent.includes('1 en la cola')",
            timeout=STEP_MS,
        )
        assert await page.is_disabled("#ranked-btn")
        await page.click("#ranked-cancel")
        await page.wait_for_function(
            "() => document.querySelector('#ranked-status').dataset.state === 'idle'",
            timeout=STEP_MS,
        )
        assert await page.inner_text("#ranked-status") == "Búsqueda cancelada."
        assert not await page.is_disabled("#ranked-btn")
        assert await page.inner_text("#msg") == ""
    finally:
        await page.context.close()
