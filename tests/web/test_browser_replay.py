"""End to end in headless Chromium: the replay of a finished match (#/replay/<table id>).

A person plays a short match against a bot to the end, opens the replay from the end screen
and steps through it (next, previous, first, last, jump to a hand, one seat's view): what the
page shows at each step is what the engine's own re-run of the record
(:func:`clients.records.check`) holds, and the fair-deal proof is the record's. A record or a
replay altered on its way to the page (a pack, a seed, an action, a step's card) is refused:
the page says it does not reproduce and shows no step.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
from playwright.async_api import Page, Route

from clients.records import check, record_from_proto
from engine.cards import card_text, cards_of
from engine.record import ReplayStep
from service.server import Server
from tests.web.test_browser import STEP_MS, create, play_to_the_end, submissions
from tests.web.test_browser import browser as browser  # noqa: PLC0414 - the shared fixtures
from tests.web.test_browser import page as page  # noqa: PLC0414
from tests.web.test_browser import server as server  # noqa: PLC0414
from tute.v1 import card_pb2, service_pb2, service_pb2_grpc

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def _record(server: Server, table_id: str) -> service_pb2.GetMatchRecordResponse:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        stub = service_pb2_grpc.TuteServiceStub(ch)
        resp: service_pb2.GetMatchRecordResponse = await stub.GetMatchRecord(
            service_pb2.GetMatchRecordRequest(table_id=table_id, include_replay=True)
        )
        return resp


async def _shown(page: Page) -> dict[str, object]:
    """What the replay shows now: its step and hand, every seat's cards, the stock."""
    return await page.evaluate(
        """() => ({
            step: Number(document.querySelector('#replay').dataset.step),
            hand: Number(document.querySelector('#replay').dataset.hand),
            hands: [...document.querySelectorAll('.r-hand')].map(h => h.dataset.cards),
            counts: [...document.querySelectorAll('.r-hand')].map(h => Number(h.dataset.count)),
            stock: Number(document.querySelector('#r-stock').textContent),
        })"""
    )


def _expected(step: ReplayStep) -> dict[str, object]:
    st = step.state
    hands = [" ".join(card_text(c) for c in sorted(cards_of(m))) for m in st.hands]
    return {"hand": st.hand_no, "hands": hands, "stock": len(st.stock)}


async def _at(page: Page, step: int) -> None:
    await page.wait_for_function(
        f"() => document.querySelector('#replay')?.dataset.step === '{step}'", timeout=STEP_MS
    )


async def test_a_finished_match_replays_step_by_step_as_the_engine_reruns_it(
    page: Page, server: Server
) -> None:
    submits = submissions(page)
    await create(page, "corriente-6", bots=1)
    await play_to_the_end(page, submits)
    table_id = page.url.rpartition("/")[2]
    resp = await _record(server, table_id)
    record = record_from_proto(resp.record)
    steps, _ = check(record)
    await page.click("#replay-link")
    await page.wait_for_selector("#verdict[data-state='verified']", timeout=STEP_MS)
    assert page.url.endswith(f"#/replay/{table_id}")
    assert await page.inner_text("#position") == f"Paso 0 de {len(steps) - 1} · mano 1"

    async def check_step(k: int) -> None:
        await _at(page, k)
        shown = await _shown(page)
        assert shown["step"] == k
        assert {key: shown[key] for key in ("hand", "hands", "stock")} == _expected(steps[k])
        h = record.hands[steps[k].state.hand_no - 1]
        assert await page.inner_text("#p-commitment") == h.commitment
        assert await page.inner_text("#p-seed") == h.server_seed
        assert (await page.inner_text("#p-pack")).split() == list(h.pack)
        action = steps[k].action
        if action is not None and action.action[0].isdigit():  # a card: in the trick shown
            played = await page.get_attribute(".r-played", "data-cards") or ""
            assert f"{action.seat}:{action.action}" in played.split()

    await check_step(0)
    for k in range(1, 6):  # action by action
        await page.click("#next")
        await check_step(k)
    await page.click("#prev")
    await check_step(4)
    await page.keyboard.press("ArrowRight")
    await check_step(5)
    await page.click("#last")
    await check_step(len(steps) - 1)
    assert (await page.inner_text("#r-final")).startswith("Partida terminada")
    assert await page.is_disabled("#next") and not await page.is_disabled("#prev")
    await page.click("#first")
    await check_step(0)
    assert await page.is_disabled("#prev")
    if len(record.hands) > 1:  # jump to the last hand: its first step is its deal
        last = record.hands[-1].hand_no
        first_of_last = next(i for i, s in enumerate(steps) if s.state.hand_no == last)
        await page.select_option("#jump-hand", str(last))
        await check_step(first_of_last)
    # One seat's view: only that seat's cards are open, the others' are counted.
    await page.select_option("#view-seat", "1")
    shown = await _shown(page)
    expected = _expected(steps[int(shown["step"])])  # type: ignore[call-overload]
    hands = expected["hands"]
    assert isinstance(hands, list)
    assert shown["hands"] == ["", hands[1]]
    assert shown["counts"] == [len(h.split()) for h in hands]
    await page.select_option("#view-seat", "all")
    assert (await _shown(page))["hands"] == hands


def _swap_pack(resp: service_pb2.GetMatchRecordResponse) -> None:
    pack = resp.record.hands[0].pack
    pack[0], pack[1] = pack[1], pack[0]


def _change_seed(resp: service_pb2.GetMatchRecordResponse) -> None:
    h = resp.record.hands[0]
    h.server_seed = ("1" if h.server_seed[0] == "0" else "0") + h.server_seed[1:]


def _card_actions(resp: service_pb2.GetMatchRecordResponse) -> list[int]:
    return [i for i, a in enumerate(resp.record.actions) if a.action[0].isdigit()]


def _change_action(resp: service_pb2.GetMatchRecordResponse) -> None:
    a = resp.record.actions[_card_actions(resp)[0]]
    a.action = "1O" if a.action != "1O" else "2O"


def _play_unheld_card(resp: service_pb2.GetMatchRecordResponse) -> None:
    """A lying server: the record and its step agree on a card the seat was never dealt."""
    i = _card_actions(resp)[0]
    a = resp.record.actions[i]
    other = resp.record.hands[0].pack[-1]  # the stock's last card: nobody holds it yet
    a.action = other
    for ev in resp.replay[i + 1].events:
        if ev.WhichOneof("kind") == "card_played":
            suit, rank = "OCEB".index(other[-1]) + 1, int(other[:-1])
            ev.card_played.card.CopyFrom(card_pb2.Card(suit=suit, rank=rank))  # type: ignore[arg-type]
            break


TAMPERS: dict[str, tuple[Callable[[service_pb2.GetMatchRecordResponse], None], str]] = {
    "pack": (_swap_pack, "not the shuffle of its seeds"),
    "seed": (_change_seed, "does not match the commitment"),
    "action": (_change_action, "el registro dice"),
    "unheld card": (_play_unheld_card, "sin tenerla"),
}


async def test_a_tampered_record_or_replay_is_refused(page: Page, server: Server) -> None:
    submits = submissions(page)
    await create(page, "corriente-6", bots=1)
    await play_to_the_end(page, submits)
    table_id = page.url.rpartition("/")[2]
    tamper: list[Callable[[service_pb2.GetMatchRecordResponse], None]] = []

    async def alter(route: Route) -> None:
        response = await route.fetch()
        msg = service_pb2.GetMatchRecordResponse.FromString(await response.body())
        for change in tamper:
            change(msg)
        headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-encoding", "content-length")
        }
        await route.fulfill(status=response.status, headers=headers, body=msg.SerializeToString())

    await page.route("**/tute.v1.TuteService/GetMatchRecord", alter)
    base = page.url.partition("#")[0]
    await page.goto(f"{base}#/replay/{table_id}")  # untouched: it verifies
    await page.wait_for_selector("#verdict[data-state='verified']", timeout=STEP_MS)
    for name, (change, why) in TAMPERS.items():
        tamper[:] = [change]
        await page.goto(f"{base}#/")
        await page.goto(f"{base}#/replay/{table_id}")
        await page.wait_for_selector("#verdict[data-state='refused']", timeout=STEP_MS)
        verdict = await page.inner_text("#verdict")
        assert "no se reproduce" in verdict and why in verdict, (name, verdict)
        assert await page.locator("#next").count() == 0, name  # no step is shown
