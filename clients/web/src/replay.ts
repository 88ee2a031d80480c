// The replay of a finished match (#/replay/<table id>), from GetMatchRecord with its replay.
//
// The rules are the server's: the server's engine re-runs the record (engine.record.replay,
// which refuses a record that does not replay to its own results) and sends each step's
// events. This page trusts neither the steps nor the record: before it shows anything it
// recomputes every hand's pack from the revealed seeds (fair.ts: the commitment and the
// tute-shuffle-v1 shuffle), deals each pack itself, and follows the steps card by card,
// refusing the whole replay when a step plays a card its seat does not hold, draws another
// card than the stock's next, names a winner the trick's cards do not give, does not apply the
// record's own action, or ends with other results than the record's. What it shows (every
// hand, trick, draw and score) is what it computed or checked.
import { create } from "@bufbuild/protobuf";
import { cardBackSvg, cardName, cardSvg, suitName } from "./cards";
import { ALGORITHM, cardNumber, cardText, verifyDeal } from "./fair";
import type { Card } from "./gen/tute/v1/card_pb";
import { CardSchema, Suit } from "./gen/tute/v1/card_pb";
import type { Event } from "./gen/tute/v1/event_pb";
import type { MatchRecord, RecordAction } from "./gen/tute/v1/record_pb";
import { RecordActor } from "./gen/tute/v1/record_pb";
import type { SideScore } from "./gen/tute/v1/score_pb";
import { MatchEndReason } from "./gen/tute/v1/score_pb";
import type { GetMatchRecordResponse } from "./gen/tute/v1/service_pb";

const SUITS = ["O", "C", "E", "B"];
const STRENGTH: Record<number, number> = { 2: 0, 4: 1, 5: 2, 6: 3, 7: 4, 10: 5, 11: 6, 12: 7, 3: 8, 1: 9 };
const POINTS: Record<number, number> = { 1: 11, 3: 10, 12: 4, 11: 3, 10: 2 };
const REASONS: Record<number, string> = {
  [MatchEndReason.SCORE]: "score", [MatchEndReason.TUTE]: "tute", [MatchEndReason.FORFEIT]: "forfeit",
};
const RANKS = [1, 2, 3, 4, 5, 6, 7, 10, 11, 12];

const suitOf = (c: number) => Math.floor(c / 10);
const rankOf = (c: number) => RANKS[c % 10];

/** The card number of a card message (-1 when it is none). */
function num(card: Card | undefined): number {
  if (!card) return -1;
  const r = RANKS.indexOf(card.rank);
  return card.suit >= Suit.OROS && card.suit <= Suit.BASTOS && r >= 0 ? (card.suit - 1) * 10 + r : -1;
}

export function cardMsg(c: number): Card {
  return create(CardSchema, { suit: (suitOf(c) + 1) as Suit, rank: rankOf(c) });
}

/** What the table looks like after one step. */
export interface Frame {
  step: number;
  action: RecordAction | null;
  hand: number;
  dealer: number;
  trumpSuit: number;
  /** The turned card while it is on the table (2p), or the dealer's trump card (3p, 4p). */
  trumpCard: number;
  stock: number;
  hands: number[][];
  trick: Array<[number, number]>;
  /** The trick taken last, kept on show until the next one (across a new deal too). */
  lastTrick: { cards: Array<[number, number]>; winner: number; hand: number } | null;
  tricksWon: number[];
  /** Per side, this hand so far: card points of the tricks taken, and cantes. */
  handPoints: number[];
  cantes: string[];
  standing: SideScore[];
  lines: string[];
  over: string;
}

export class Refused extends Error {}

interface Walk {
  rec: MatchRecord;
  n: number;
  names: string[];
  hands: Set<number>[];
  stock: number[];
  trick: Array<[number, number]>;
  frame: Frame;
  dealt: number;
  ended: boolean;
}

const sideOf = (n: number, seat: number) => (n === 4 ? seat % 2 : seat);

function sortedHand(h: Set<number>): number[] {
  return [...h].sort((a, b) => a - b);
}

export function seatNames(rec: MatchRecord): string[] {
  return rec.seats.map((s) => (s.bot && !s.displayName.includes(s.botLevel) ? `${s.displayName} (bot ${s.botLevel})` : s.displayName || `asiento ${s.index}`));
}

/** Check the record's deals and its replay steps; the frames to show, or Refused. */
export async function buildReplay(resp: GetMatchRecordResponse): Promise<Frame[]> {
  const rec = resp.record;
  if (!rec) throw new Refused("la respuesta no trae el registro");
  if (rec.format !== "tute-record-v1") throw new Refused(`formato de registro desconocido: ${rec.format}`);
  if (rec.shuffleAlgorithm !== ALGORITHM) throw new Refused(`barajado desconocido: ${rec.shuffleAlgorithm}`);
  const n = rec.seats.length;
  if (![2, 3, 4].includes(n) || (rec.rules?.options?.players ?? n) !== n) throw new Refused("los asientos no son los de las reglas");
  for (const [k, h] of rec.hands.entries()) {
    if (h.handNumber !== k + 1 || h.clientSeeds.length !== n) throw new Refused(`mano ${k + 1}: mal numerada o sin una semilla por asiento`);
    const why = await verifyDeal(h, n);
    if (why) throw new Refused(why);
  }
  if (resp.replay.length !== rec.actions.length + 1) throw new Refused("la repetición no tiene un paso por acción");
  const w: Walk = {
    rec, n, names: seatNames(rec), hands: [], stock: [], trick: [], dealt: 0, ended: false,
    frame: {
      step: 0, action: null, hand: 0, dealer: rec.firstDealer, trumpSuit: -1, trumpCard: -1, stock: 0, hands: [],
      trick: [], lastTrick: null, tricksWon: Array(n).fill(0), handPoints: [], cantes: [], standing: [], lines: [], over: "",
    },
  };
  const frames: Frame[] = [];
  for (const [i, step] of resp.replay.entries()) {
    if (step.actionIndex !== i - 1) throw new Refused(`paso ${i}: no es la acción ${i - 1}`);
    if (w.ended) throw new Refused("hay pasos después del final");
    const action = i === 0 ? null : rec.actions[i - 1];
    w.frame = { ...w.frame, step: i, action, lines: [], cantes: [...w.frame.cantes] };
    let applied = action === null;
    for (const ev of step.events) {
      if (isActorEvent(ev)) {
        if (applied) throw new Refused(`paso ${i}: más de una acción`);
        if (action) checkAction(w, action, ev, i);
        applied = true;
      }
      apply(w, ev, i);
    }
    if (!applied) throw new Refused(`paso ${i}: la acción ${action?.action} no se aplica`);
    if (i === 0 && w.dealt !== 1) throw new Refused("el primer paso no reparte la primera mano");
    w.frame.hands = w.hands.map(sortedHand);
    w.frame.trick = [...w.trick];
    w.frame.stock = w.stock.length;
    frames.push(w.frame);
  }
  if (!w.ended) throw new Refused("la partida no termina");
  if (w.dealt !== rec.hands.length) throw new Refused(`${rec.hands.length} manos en el registro, ${w.dealt} repartidas`);
  return frames;
}

function isActorEvent(ev: Event): boolean {
  return ["cardPlayed", "canteSung", "tuteDeclared", "trumpExchanged", "playerForfeited"].includes(ev.kind.case ?? "");
}

/** The step's first actor event must be the record's action, by the record's seat. */
function checkAction(w: Walk, a: RecordAction, ev: Event, i: number): void {
  const bad = () => new Refused(`paso ${i}: el registro dice «${a.action}» del asiento ${a.seat}, la repetición otra cosa`);
  const k = ev.kind;
  if (a.timedOut !== (a.action === "timeout") || (a.by === RecordActor.BOT && w.rec.seats[a.seat] && !w.rec.seats[a.seat].bot)) throw bad();
  if (k.case === "cardPlayed") {
    if (k.value.seat !== a.seat) throw bad();
    if (a.action === "timeout" ? !k.value.timedOut : cardNumber(a.action) !== num(k.value.card) || k.value.timedOut) throw bad();
  } else if (k.case === "canteSung") {
    if (k.value.cante?.seat !== a.seat || a.action !== `sing ${SUITS[(k.value.cante?.suit ?? 0) - 1]}`) throw bad();
  } else if (k.case === "tuteDeclared") {
    if (k.value.tute?.seat !== a.seat || a.action !== `tute ${k.value.tute?.rank}`) throw bad();
  } else if (k.case === "trumpExchanged") {
    if (k.value.seat !== a.seat || a.action !== "exchange") throw bad();
  } else if (k.case === "playerForfeited") {
    if (k.value.seat !== a.seat || a.action !== "forfeit") throw bad();
  }
}

function take(w: Walk, seat: number, c: number, i: number, what: string): void {
  if (!w.hands[seat]?.has(c)) throw new Refused(`paso ${i}: ${w.names[seat]} ${what} ${c >= 0 ? cardText(c) : "?"} sin tenerla`);
  w.hands[seat].delete(c);
}

function trickWinner(trick: Array<[number, number]>, trump: number): number {
  const led = suitOf(trick[0][1]);
  let win = 0;
  for (let p = 1; p < trick.length; p++) {
    const c = trick[p][1];
    const best = trick[win][1];
    if (suitOf(c) === suitOf(best)) {
      if (STRENGTH[rankOf(c)] > STRENGTH[rankOf(best)]) win = p;
    } else if (suitOf(c) === trump || (suitOf(c) === led && suitOf(best) !== trump)) {
      win = p;
    }
  }
  return trick[win][0];
}

function deal(w: Walk, ev: Extract<Event["kind"], { case: "handDealt" }>["value"], i: number): void {
  const h = ev.handNumber;
  if (h !== w.dealt + 1 || h > w.rec.hands.length) throw new Refused(`paso ${i}: reparte la mano ${h}, sin registro`);
  if (h === 1 && ev.dealer !== w.rec.firstDealer) throw new Refused("la primera mano la reparte otro asiento");
  const hand = w.rec.hands[h - 1];
  if (ev.dealCommitment !== hand.commitment) throw new Refused(`mano ${h}: otro compromiso que el registro`);
  const pack = hand.pack.map(cardNumber);
  const n = w.n;
  const dealt = n === 2 ? ev.handSizes.reduce((a, b) => a + b, 0) : pack.length;
  w.hands = Array.from({ length: n }, () => new Set<number>());
  for (let k = 0; k < dealt; k++) w.hands[(ev.dealer + 1 + k) % n].add(pack[k]);
  const trump = n === 2 ? pack[dealt] : pack[pack.length - 1];
  w.stock = n === 2 ? [...pack.slice(dealt + 1), trump] : [];
  if (num(ev.trumpCard) !== trump || ev.trumpSuit - 1 !== suitOf(trump) || ev.stockSize !== w.stock.length
      || ev.handSizes.some((s, seat) => s !== w.hands[seat].size)) {
    throw new Refused(`mano ${h}: el reparto no es el de su baraja`);
  }
  w.dealt = h;
  w.trick = [];
  Object.assign(w.frame, {
    hand: h, dealer: ev.dealer, trumpSuit: suitOf(trump), trumpCard: trump,
    tricksWon: Array(n).fill(0), handPoints: Array(n === 4 ? 2 : n).fill(0), cantes: [],
  });
  w.frame.lines.push(`Mano ${h}: reparte ${w.names[ev.dealer]}, triunfo ${cardName(cardMsg(trump))}`);
}

function apply(w: Walk, ev: Event, i: number): void {
  const k = ev.kind;
  const f = w.frame;
  const name = (s: number) => w.names[s] ?? `asiento ${s}`;
  switch (k.case) {
    case "handDealt":
      deal(w, k.value, i);
      return;
    case "cardPlayed": {
      const c = num(k.value.card);
      take(w, k.value.seat, c, i, "juega");
      w.trick.push([k.value.seat, c]);
      f.lines.push(`${name(k.value.seat)} juega ${cardName(cardMsg(c))}${k.value.timedOut ? " (se le acabó el tiempo)" : ""}`);
      return;
    }
    case "trickTaken": {
      const t = k.value.trick;
      const cards = (t?.cards ?? []).map((p): [number, number] => [p.seat, num(p.card)]);
      const points = w.trick.reduce((s, [, c]) => s + (POINTS[rankOf(c)] ?? 0), 0);
      if (!t || w.trick.length !== w.n || JSON.stringify(cards) !== JSON.stringify(w.trick)
          || t.winner !== trickWinner(w.trick, f.trumpSuit) || t.points !== points) {
        throw new Refused(`paso ${i}: la baza no es la de sus cartas`);
      }
      const winner = t.winner;
      f.lastTrick = { cards, winner, hand: f.hand };
      f.tricksWon = f.tricksWon.map((x, s) => (s === winner ? x + 1 : x));
      f.handPoints = f.handPoints.map((x, s) => (s === sideOf(w.n, winner) ? x + points : x));
      w.trick = [];
      f.lines.push(`${name(winner)} se lleva la baza (${points} puntos)`);
      return;
    }
    case "cardDrawn": {
      const c = num(k.value.card);
      if (!w.stock.length || c !== w.stock[0] || k.value.stockSize !== w.stock.length - 1) {
        throw new Refused(`paso ${i}: ${name(k.value.seat)} roba otra carta que la del mazo`);
      }
      w.stock.shift();
      w.hands[k.value.seat].add(c);
      if (!w.stock.length) f.trumpCard = -1;
      f.lines.push(`${name(k.value.seat)} roba ${cardName(cardMsg(c))}`);
      return;
    }
    case "trumpExchanged": {
      const given = num(k.value.given);
      const taken = num(k.value.taken);
      if (!w.stock.length || w.stock[w.stock.length - 1] !== taken || suitOf(given) !== f.trumpSuit) {
        throw new Refused(`paso ${i}: un cambio del triunfo que no es posible`);
      }
      take(w, k.value.seat, given, i, "cambia");
      w.hands[k.value.seat].add(taken);
      w.stock[w.stock.length - 1] = given;
      f.trumpCard = given;
      f.lines.push(`${name(k.value.seat)} cambia ${cardName(cardMsg(given))} por ${cardName(cardMsg(taken))}`);
      return;
    }
    case "canteSung": {
      const c = k.value.cante;
      const suit = (c?.suit ?? 0) - 1;
      const held = c && w.hands[c.seat]?.has(suit * 10 + 8) && w.hands[c.seat]?.has(suit * 10 + 9);
      if (!c || !held || c.points !== (suit === f.trumpSuit ? 40 : 20)) throw new Refused(`paso ${i}: un cante sin rey y caballo`);
      f.handPoints = f.handPoints.map((x, s) => (s === sideOf(w.n, c.seat) ? x + c.points : x));
      const text = `${name(c.seat)}: las ${c.points} en ${suitName(c.suit)}`;
      f.cantes = [...f.cantes, text];
      f.lines.push(`canta ${text}`);
      return;
    }
    case "tuteDeclared": {
      const t = k.value.tute;
      const r = RANKS.indexOf(t?.rank ?? 0);
      if (!t || r < 8 || ![0, 1, 2, 3].every((s) => w.hands[t.seat]?.has(s * 10 + r))) throw new Refused(`paso ${i}: un tute sin las cuatro cartas`);
      f.lines.push(`${name(t.seat)} canta tute de ${t.rank === 12 ? "reyes" : "caballos"}`);
      return;
    }
    case "handScored": {
      const r = k.value.result;
      const mine = w.rec.results?.hands.find((h) => h.handNumber === r?.handNumber);
      const totals = r?.tute ? Array(f.handPoints.length).fill(0) : (r?.totals ?? []).map((t) => t.total);
      if (!r || !mine || r.handNumber !== f.hand || JSON.stringify(totals) !== JSON.stringify(mine.totals)
          || (r.winnerSide ?? -1) !== mine.winnerSide || r.capote !== mine.capote || (r.tute?.seat ?? -1) !== mine.tuteSeat) {
        throw new Refused(`mano ${f.hand}: otro resultado que el del registro`);
      }
      f.standing = k.value.scores;
      f.lines.push(`Mano ${r.handNumber} contada: ${totals.join(" a ")}${r.capote ? " (capote)" : ""}`);
      return;
    }
    case "gameEnded":
      f.lines.push(`Juego ${k.value.result?.gameNumber ?? ""} para el bando ${(k.value.result?.winnerSide ?? 0) + 1}`);
      return;
    case "playerForfeited":
      f.lines.push(`${name(k.value.seat)} abandona`);
      return;
    case "matchEnded": {
      const r = k.value.result;
      const res = w.rec.results;
      if (!r || !res || JSON.stringify(r.winnerSides) !== JSON.stringify(res.winnerSides) || REASONS[r.reason] !== res.reason) {
        throw new Refused("la partida termina con otro resultado que el del registro");
      }
      f.standing = r.scores.length ? r.scores : f.standing;
      const winners = r.winnerSeats.map(name).join(" y ");
      f.over = `Partida terminada: ${winners ? `gana ${winners}` : "empate"} (${{ score: "por puntos", tute: "por tute", forfeit: "por abandono" }[res.reason] ?? res.reason})`;
      f.lines.push(f.over);
      w.ended = true;
      return;
    }
    default:
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// the page

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const texts = (cards: number[]) => cards.map(cardText).join(" ");

function actionText(a: RecordAction, names: string[]): string {
  const who = names[a.seat] ?? `asiento ${a.seat}`;
  const at = `${(Number(a.offsetMs) / 1000).toFixed(1)} s`;
  const m = /^sing ([OCEB])$/.exec(a.action);
  let what = a.action;
  const c = cardNumber(a.action);
  if (c >= 0) what = `juega ${cardName(cardMsg(c))}`;
  else if (a.action === "timeout") what = "se le acaba el tiempo (el servidor juega la carta más barata)";
  else if (m) what = `canta en ${suitName((SUITS.indexOf(m[1]) + 1) as Suit)}`;
  else if (a.action.startsWith("tute")) what = `canta tute`;
  else if (a.action === "exchange") what = "cambia el triunfo";
  else if (a.action === "forfeit") what = a.by === RecordActor.SERVER ? "abandona (desconectado)" : "abandona";
  const by = a.by === RecordActor.BOT ? " (bot)" : "";
  return `[${at}] ${who}${by} ${what}`;
}

export async function loadReplay(
  fetchRecord: () => Promise<GetMatchRecordResponse>,
  root: HTMLElement,
  tableId: string,
  errorText: (err: unknown) => string,
): Promise<void> {
  document.title = `Tute: repetición de ${tableId}`;
  root.innerHTML = `<main class="replay" id="replay">
    <header class="bar"><a href="#/" class="small">← Mesas</a> <a href="#/t/${esc(tableId)}" class="small">la mesa</a>
      <span id="title">Repetición</span></header>
    <p id="verdict" class="verdict" role="status">Comprobando el registro…</p>
    <div id="body"></div></main>`;
  const verdict = document.getElementById("verdict") as HTMLElement;
  let resp: GetMatchRecordResponse;
  let frames: Frame[];
  try {
    resp = await fetchRecord();
    frames = await buildReplay(resp);
  } catch (err) {
    verdict.className = "verdict refused";
    verdict.id = "verdict";
    verdict.dataset.state = "refused";
    verdict.textContent = err instanceof Refused
      ? `No se muestra esta partida: su registro no se reproduce (${err.message}).`
      : errorText(err);
    return;
  }
  const rec = resp.record as MatchRecord;
  const names = seatNames(rec);
  verdict.dataset.state = "verified";
  verdict.textContent = `Registro comprobado: ${rec.hands.length} ${rec.hands.length === 1 ? "mano" : "manos"} barajadas con ${ALGORITHM} de sus semillas (el compromiso SHA-256 de cada una coincide) y ${rec.actions.length} acciones seguidas carta a carta hasta el resultado del registro.`;
  (document.getElementById("title") as HTMLElement).textContent = `Repetición · ${rec.rules?.preset || `${rec.seats.length} jugadores`} · ${tableId}`;
  const body = document.getElementById("body") as HTMLElement;
  body.innerHTML = `
    <nav class="controls" aria-label="Pasos">
      <button id="first" aria-label="Primer paso">⏮</button><button id="prev" aria-label="Paso anterior">◀</button>
      <span id="position" aria-live="polite"></span>
      <button id="next" aria-label="Paso siguiente">▶</button><button id="last" aria-label="Último paso">⏭</button>
      <label>Mano <select id="jump-hand">${rec.hands.map((h) => `<option value="${h.handNumber}">${h.handNumber}</option>`).join("")}</select></label>
      <label>Ver <select id="view-seat"><option value="all">todas las manos</option>${names.map((nm, s) => `<option value="${s}">${esc(nm)}</option>`).join("")}</select></label>
    </nav>
    <p id="step-action" class="turn"></p>
    <section id="r-seats" class="r-seats" aria-label="Manos"></section>
    <section class="middle"><div id="r-trick" class="trick" aria-label="Baza"></div><div id="r-side" class="side"></div></section>
    <section id="r-scores" class="scores" aria-label="Puntuación"></section>
    <ol id="r-lines" class="r-lines" aria-label="Lo que pasó en este paso"></ol>
    <details id="r-proof" class="proof" open><summary>Reparto justo de la mano</summary><div id="proof"></div></details>`;
  let at = 0;
  let seat: number | null = null;
  const el = (id: string) => document.getElementById(id) as HTMLElement;
  const cardImg = (c: number, cls = "") => `<div class="card ${cls}" role="img" aria-label="${esc(cardName(cardMsg(c)))}">${cardSvg(cardMsg(c))}</div>`;
  const render = () => {
    const f = frames[at];
    const main = el("replay");
    main.dataset.step = String(at);
    main.dataset.hand = String(f.hand);
    el("position").textContent = `Paso ${at} de ${frames.length - 1} · mano ${f.hand}`;
    (el("first") as HTMLButtonElement).disabled = at === 0;
    (el("prev") as HTMLButtonElement).disabled = at === 0;
    (el("next") as HTMLButtonElement).disabled = at === frames.length - 1;
    (el("last") as HTMLButtonElement).disabled = at === frames.length - 1;
    (el("jump-hand") as HTMLSelectElement).value = String(f.hand);
    el("step-action").textContent = f.action ? actionText(f.action, names) : "Empieza la partida";
    el("r-seats").innerHTML = f.hands.map((cards, s) => {
      const open = seat === null || seat === s;
      return `<div class="r-seat ${f.action?.seat === s ? "acted" : ""}" data-seat="${s}">
        <div class="who">${esc(names[s])}${s === f.dealer ? " · reparte" : ""} · ${f.tricksWon[s]} bazas</div>
        <div class="r-hand cards" data-seat="${s}" data-count="${cards.length}" data-cards="${open ? texts(cards) : ""}">${
          cards.map((c) => (open ? cardImg(c, "small") : `<div class="card small back" aria-hidden="true">${cardBackSvg()}</div>`)).join("")}</div></div>`;
    }).join("");
    const showing = f.trick.length ? f.trick : (f.lastTrick?.cards ?? []);
    el("r-trick").innerHTML = `<div class="r-played" data-cards="${showing.map(([s, c]) => `${s}:${cardText(c)}`).join(" ")}">${
      showing.map(([s, c]) => `<div class="slot"><span class="slot-name">${esc(names[s])}</span>${cardImg(c)}</div>`).join("")}</div>
      <p class="caption">${f.trick.length ? "Baza en juego" : f.lastTrick ? `Última baza${f.lastTrick.hand !== f.hand ? ` de la mano ${f.lastTrick.hand}` : ""}: la gana ${esc(names[f.lastTrick.winner])}` : ""}</p>`;
    el("r-side").innerHTML = `<div class="trump">${f.trumpCard >= 0 ? cardImg(f.trumpCard, "small") : ""}
      <p>Triunfo<br><strong id="r-trump" data-suit="${SUITS[f.trumpSuit] ?? ""}">${f.trumpSuit >= 0 ? esc(suitName((f.trumpSuit + 1) as Suit)) : "—"}</strong></p></div>
      <div class="stock"><p>Mazo<br><strong id="r-stock">${f.stock}</strong></p></div>`;
    const sides = f.handPoints.map((_, s) => rec.seats.filter((x) => sideOf(rec.seats.length, x.index) === s).map((x) => names[x.index]).join(" y "));
    el("r-scores").innerHTML = `${f.over ? `<p class="final" id="r-final">${esc(f.over)}</p>` : ""}
      ${f.cantes.length ? `<p class="cantes">Cantes: ${esc(f.cantes.join(", "))}</p>` : ""}
      <table><thead><tr><th>Bando</th><th>Esta mano</th><th>Puntos</th><th>Juegos</th><th>Tantos</th></tr></thead><tbody>${
        sides.map((who, s) => {
          const st = f.standing.find((x) => x.side === s);
          return `<tr data-side="${s}"><th scope="row">${esc(who)}</th><td class="hand-points">${f.handPoints[s]}</td><td>${st?.gameScore ?? 0}</td><td>${st?.gamesWon ?? 0}</td><td>${st?.matchPoints ?? 0}</td></tr>`;
        }).join("")}</tbody></table>`;
    el("r-lines").innerHTML = f.lines.map((l) => `<li>${esc(l)}</li>`).join("");
    const h = rec.hands[f.hand - 1];
    el("proof").innerHTML = h ? `<dl class="proof-list" data-hand="${h.handNumber}">
      <dt>Algoritmo</dt><dd>${ALGORITHM}</dd>
      <dt>Compromiso (publicado antes de repartir)</dt><dd><code id="p-commitment">${esc(h.commitment)}</code></dd>
      <dt>Semilla del servidor (revelada al acabar la mano)</dt><dd><code id="p-seed">${esc(h.serverSeed)}</code></dd>
      <dt>Semillas de los jugadores</dt><dd>${h.clientSeeds.map((c, s) => `${esc(names[s])}: <code>${c ? esc(c) : "—"}</code>`).join("<br>")}</dd>
      <dt>Baraja</dt><dd><code id="p-pack">${esc(h.pack.join(" "))}</code></dd>
      <dd id="p-ok" class="ok">✓ SHA-256 de la semilla = compromiso, y la semilla baraja esta baraja (comprobado en este navegador)</dd></dl>` : "";
  };
  const go = (to: number) => {
    at = Math.max(0, Math.min(frames.length - 1, to));
    render();
  };
  el("first").addEventListener("click", () => go(0));
  el("prev").addEventListener("click", () => go(at - 1));
  el("next").addEventListener("click", () => go(at + 1));
  el("last").addEventListener("click", () => go(frames.length - 1));
  el("jump-hand").addEventListener("change", () => {
    const h = Number((el("jump-hand") as HTMLSelectElement).value);
    go(frames.findIndex((f) => f.hand === h));
  });
  el("view-seat").addEventListener("change", () => {
    const v = (el("view-seat") as HTMLSelectElement).value;
    seat = v === "all" ? null : Number(v);
    render();
  });
  render();
}

export function replayKeys(e: KeyboardEvent): void {
  if (!document.getElementById("replay") || (e.target as HTMLElement).closest("input, select, textarea")) return;
  const id = { ArrowRight: "next", ArrowLeft: "prev", Home: "first", End: "last" }[e.key];
  const btn = id ? (document.getElementById(id) as HTMLButtonElement | null) : null;
  if (btn && !btn.disabled) {
    btn.click();
    e.preventDefault();
  }
}
