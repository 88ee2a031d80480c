// The tute web client: a lobby (open tables, create, join by invite code or link, spectate)
// and a table (hand, trick, trump, cantes, scores, turn timer) over the Connect protocol.
// Routes: #/ (lobby), #/t/<table id> (the table: our seat when this browser holds its token,
// else as a spectator), #/join/<invite code> (the join screen of a private table),
// #/replay/<table id> (the checked replay of a finished match, replay.ts). "Play ranked" queues
// this browser's player (a guest CreatePlayer makes on the first search, its player token kept
// in localStorage) with FindMatch and follows the ticket with WatchTicket to the seat the
// matcher gives.
import "./style.css";
import { cardBackSvg, cardName, cardSvg, suitName, suitPicture } from "./cards";
import { bearer, Code, connect, ConnectError, errorReason, errorText, forgetSeat, saveSeat, savedSeat } from "./api";
import type { SeatKey, Tute } from "./api";
import type { Action } from "./gen/tute/v1/action_pb";
import type { Card, Trick } from "./gen/tute/v1/card_pb";
import type { Event } from "./gen/tute/v1/event_pb";
import type { Table } from "./gen/tute/v1/table_pb";
import { OccupantKind, TableStatus, Visibility } from "./gen/tute/v1/table_pb";
import type { TableView } from "./gen/tute/v1/view_pb";
import { TableViewSchema } from "./gen/tute/v1/view_pb";
import { equals } from "@bufbuild/protobuf";
import { loadReplay, replayKeys } from "./replay";

const PRESETS: Array<[string, string]> = [
  ["corriente-6", "Tute corriente, 2 jugadores, 6 cartas"],
  ["corriente-8", "Tute corriente, 2 jugadores, 8 cartas"],
  ["corriente-juegos", "Tute corriente por juegos, 2 jugadores"],
  ["tres", "Tute a tres"],
  ["parejas", "Tute por parejas (4)"],
  ["parejas-manos", "Parejas por manos (4)"],
  ["parejas-mejor-de-3", "Parejas, al mejor de 3 (4)"],
];
const LEVELS = ["random", "easy", "medium", "hard"];
const PLAYERS: Record<string, number> = {
  "corriente-6": 2, "corriente-8": 2, "corriente-juegos": 2, tres: 3,
  parejas: 4, "parejas-manos": 4, "parejas-mejor-de-3": 4,
};

const api: Tute = connect(window.location.origin);
const root = document.getElementById("app") as HTMLElement;

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function myName(): string {
  return localStorage.getItem("tute.name") || "Invitado";
}

// ---------------------------------------------------------------------------------------------
// routing

let leaveCurrent: (() => void) | null = null;
let searching: AbortController | null = null;

/** This browser's player token (FindMatch's identity, and the seats ranked play gives): the
 * guest kept in localStorage, else a new one (CreatePlayer, named as the lobby's name field). */
async function playerToken(signal: AbortSignal): Promise<string> {
  const kept = localStorage.getItem("tute.player");
  if (kept) return kept;
  const made = await api.createPlayer({ displayName: myName() }, { signal });
  localStorage.setItem("tute.player", made.playerToken);
  localStorage.setItem("tute.player.id", made.player?.playerId ?? "");
  return made.playerToken;
}

/** FindMatch with this browser's player; a kept token the server does not know (its players
 * were reset) is replaced by a new guest once. */
async function findMatch(mode: string, signal: AbortSignal): Promise<[string, string]> {
  let token = await playerToken(signal);
  try {
    return [token, (await api.findMatch({ mode }, { ...bearer(token), signal })).ticketId];
  } catch (err) {
    if (errorReason(err) !== "UNKNOWN_PLAYER") throw err;
    localStorage.removeItem("tute.player");
    token = await playerToken(signal);
    return [token, (await api.findMatch({ mode }, { ...bearer(token), signal })).ticketId];
  }
}

function route(): void {
  leaveCurrent?.();
  leaveCurrent = null;
  searching?.abort(); // a ticket whose stream closes is cancelled
  searching = null;
  const hash = window.location.hash.replace(/^#/, "");
  const table = hash.match(/^\/t\/([A-Za-z0-9_-]+)/);
  const join = hash.match(/^\/join\/([A-Za-z0-9_-]+)/);
  const replay = hash.match(/^\/replay\/([A-Za-z0-9_-]+)/);
  if (table) leaveCurrent = showTable(table[1]);
  else if (replay) showReplay(replay[1]);
  else if (join) showJoin(join[1]);
  else showLobby();
}

window.addEventListener("hashchange", route);
document.addEventListener("keydown", replayKeys);

function showReplay(tableId: string): void {
  void loadReplay(() => api.getMatchRecord({ tableId, includeReplay: true }, bearer(undefined, tableId)), root, tableId, errorText);
}

// ---------------------------------------------------------------------------------------------
// lobby

function showLobby(): void {
  document.title = "Tute: mesas";
  root.innerHTML = `
  <main class="lobby">
    <h1>Tute</h1>
    <label class="field">Tu nombre <input id="name" maxlength="32" value="${esc(myName())}"></label>
    <section aria-labelledby="h-create">
      <h2 id="h-create">Nueva mesa</h2>
      <form id="create" class="grid">
        <label>Modalidad <select id="preset">${PRESETS.map(([p, t]) => `<option value="${p}">${esc(t)}</option>`).join("")}</select></label>
        <label>Tiempo por turno (s) <input id="turn" type="number" min="0" max="600" value="30"></label>
        <label class="check"><input id="private" type="checkbox"> Privada (solo con invitación)</label>
        <label>Bots <input id="bots" type="number" min="0" max="3" value="1"></label>
        <label>Nivel de los bots <select id="level">${LEVELS.map((l) => `<option>${l}</option>`).join("")}</select></label>
        <button type="submit" id="create-btn">Crear y sentarme</button>
      </form>
    </section>
    <section aria-labelledby="h-ranked">
      <h2 id="h-ranked">Partida clasificada</h2>
      <form id="ranked" class="row"><label>Modalidad <select id="ranked-mode">
        <option value="2p">2 jugadores (tute corriente a 8 cartas)</option>
        <option value="3p">Tute a tres</option>
        <option value="4p">Parejas por manos (4)</option></select></label>
        <button id="ranked-btn">Buscar partida</button>
        <button type="button" id="ranked-cancel" hidden>Cancelar</button></form>
      <p id="ranked-status" aria-live="polite"></p>
      <p id="ranked-rating"></p>
    </section>
    <section aria-labelledby="h-join">
      <h2 id="h-join">Unirse o mirar</h2>
      <form id="join-code" class="row"><label>Código de invitación <input id="code" maxlength="16"></label><button>Unirme</button></form>
      <form id="spectate" class="row"><label>Mesa (id) <input id="spec-id" maxlength="64"></label><button>Mirar</button>
        <button type="button" id="replay-btn">Repetición</button></form>
    </section>
    <section aria-labelledby="h-open">
      <h2 id="h-open">Mesas abiertas <button id="refresh" class="small">Actualizar</button></h2>
      <div class="row"><label>Modalidad <select id="filter"><option value="">todas</option>${PRESETS.map(([p]) => `<option>${p}</option>`).join("")}</select></label>
      <label>Jugadores <select id="filter-players"><option value="0">todos</option><option>2</option><option>3</option><option>4</option></select></label></div>
      <ul id="tables" class="tables" aria-live="polite"></ul>
    </section>
    <p id="msg" class="msg" role="alert"></p>
  </main>`;
  const $ = (id: string) => document.getElementById(id) as HTMLInputElement;
  const msg = document.getElementById("msg") as HTMLElement;
  $("name").addEventListener("change", () => localStorage.setItem("tute.name", $("name").value.trim()));
  const syncBots = () => {
    const max = (PLAYERS[$("preset").value] ?? 2) - 1;
    $("bots").max = String(max);
    if (Number($("bots").value) > max) $("bots").value = String(max);
  };
  $("preset").addEventListener("change", syncBots);
  syncBots();

  (document.getElementById("create") as HTMLFormElement).addEventListener("submit", async (e) => {
    e.preventDefault();
    localStorage.setItem("tute.name", $("name").value.trim());
    msg.textContent = "";
    try {
      const created = await api.createTable({
        rules: { preset: $("preset").value, options: { turnTimeS: Number($("turn").value) } },
        visibility: $("private").checked ? Visibility.PRIVATE : Visibility.PUBLIC,
        takeSeat: true,
        displayName: myName(),
      });
      saveSeat(created.tableId, { token: created.seatToken, seat: created.seat ?? 0, owner: created.ownerToken });
      for (let i = 0; i < Number($("bots").value); i++) {
        await api.addBot({ tableId: created.tableId, level: $("level").value }, bearer(created.ownerToken, created.tableId));
      }
      window.location.hash = `#/t/${created.tableId}`;
    } catch (err) {
      msg.textContent = errorText(err);
    }
  });
  (document.getElementById("ranked") as HTMLFormElement).addEventListener("submit", (e) => {
    e.preventDefault();
    void playRanked($("ranked-mode").value, msg);
  });
  document.getElementById("ranked-cancel")?.addEventListener("click", () => {
    searching?.abort();
  });
  (document.getElementById("join-code") as HTMLFormElement).addEventListener("submit", (e) => {
    e.preventDefault();
    const code = $("code").value.trim();
    if (code) window.location.hash = `#/join/${code}`;
  });
  document.getElementById("replay-btn")?.addEventListener("click", () => {
    const id = $("spec-id").value.trim();
    if (id) window.location.hash = `#/replay/${id}`;
  });
  (document.getElementById("spectate") as HTMLFormElement).addEventListener("submit", (e) => {
    e.preventDefault();
    const id = $("spec-id").value.trim();
    if (id) window.location.hash = `#/t/${id}`;
  });
  const list = async () => {
    try {
      const res = await api.listTables({ preset: $("filter").value, players: Number($("filter-players").value), pageSize: 50 });
      const ul = document.getElementById("tables");
      if (!ul) return;
      ul.innerHTML = res.tables.length
        ? res.tables.map(tableRow).join("")
        : `<li class="empty">No hay mesas esperando jugadores.</li>`;
    } catch (err) {
      msg.textContent = errorText(err);
    }
  };
  document.getElementById("refresh")?.addEventListener("click", list);
  $("filter").addEventListener("change", list);
  $("filter-players").addEventListener("change", list);
  document.getElementById("tables")?.addEventListener("click", async (e) => {
    const btn = (e.target as HTMLElement).closest("button[data-join]") as HTMLButtonElement | null;
    if (!btn) return;
    await joinBy({ case: "tableId", value: btn.dataset.join as string }, msg);
  });
  void list();
  void showRating();
}

/** This browser's player's standing per ranked mode (GetPlayer), once it has a player. */
async function showRating(): Promise<void> {
  const token = localStorage.getItem("tute.player");
  const out = document.getElementById("ranked-rating");
  if (!token || !out) return;
  try {
    const { player } = await api.getPlayer({}, bearer(token));
    if (!player) return;
    out.textContent = `${player.displayName}: ` + player.ratings
      .map((r) => `${r.mode} ${r.rating}${r.provisional ? "?" : ""} (${r.games} partidas, ${r.wins} ganadas)`)
      .join(" · ");
  } catch {
    out.textContent = ""; // an unknown player: the next search makes a new one
  }
}

/** FindMatch, then WatchTicket to the seat: the lobby shows the ticket's progress; closing the
 * stream (Cancelar, or leaving the lobby) cancels the ticket. */
async function playRanked(mode: string, msg: HTMLElement): Promise<void> {
  if (searching) return;
  const abort = new AbortController();
  searching = abort;
  const status = document.getElementById("ranked-status") as HTMLElement;
  const button = document.getElementById("ranked-btn") as HTMLButtonElement;
  const cancel = document.getElementById("ranked-cancel") as HTMLButtonElement;
  button.disabled = true;
  cancel.hidden = false;
  msg.textContent = "";
  status.dataset.state = "searching";
  status.textContent = "Buscando partida…";
  try {
    const [token, ticketId] = await findMatch(mode, abort.signal);
    for await (const m of api.watchTicket({ ticketId }, { ...bearer(token), signal: abort.signal })) {
      if (m.progress.case === "waiting") {
        const w = m.progress.value;
        status.textContent = `Buscando partida: ${w.queued} en la cola, ±${w.window} puntos, ${Math.round(w.waitedS)} s esperando`
          + (w.botsInS > 0 ? ` (bots dentro de ${Math.ceil(w.botsInS)} s)` : " (con bots si falta alguien)");
      } else if (m.progress.case === "matched") {
        const seat = m.progress.value;
        saveSeat(seat.tableId, { token: seat.seatToken || token, seat: seat.seat });
        status.dataset.state = "matched";
        searching = null;
        window.location.hash = `#/t/${seat.tableId}`;
        return;
      }
    }
  } catch (err) {
    if (!abort.signal.aborted) msg.textContent = errorText(err);
  }
  if (searching === abort) searching = null;
  if (document.body.contains(status)) {
    status.dataset.state = "idle";
    status.textContent = abort.signal.aborted ? "Búsqueda cancelada." : "";
    button.disabled = false;
    cancel.hidden = true;
  }
}

function tableRow(t: Table): string {
  const names = t.seats.filter((s) => s.occupant !== OccupantKind.EMPTY).map((s) => s.displayName || "bot");
  return `<li><span class="preset">${esc(t.rules?.preset ?? "")}</span>
    <span>${t.seats.length - t.freeSeats}/${t.seats.length}: ${esc(names.join(", "))}</span>
    <button data-join="${esc(t.tableId)}" aria-label="Unirme a la mesa de ${esc(names.join(", ") || t.tableId)}">Unirme</button>
    <a href="#/t/${esc(t.tableId)}">mirar</a></li>`;
}

async function joinBy(target: { case: "tableId" | "inviteCode"; value: string }, msg: HTMLElement): Promise<void> {
  try {
    const joined = await api.joinTable({ target, displayName: myName() });
    saveSeat(joined.tableId, { token: joined.seatToken, seat: joined.seat });
    window.location.hash = `#/t/${joined.tableId}`;
  } catch (err) {
    msg.textContent = errorText(err);
  }
}

function showJoin(code: string): void {
  document.title = "Tute: invitación";
  root.innerHTML = `<main class="lobby"><h1>Invitación a una mesa</h1>
    <form id="join" class="grid"><label>Tu nombre <input id="name" maxlength="32" value="${esc(myName())}"></label>
    <p>Código: <strong>${esc(code)}</strong></p><button>Sentarme</button></form>
    <p><a href="#/">Volver a las mesas</a></p><p id="msg" class="msg" role="alert"></p></main>`;
  (document.getElementById("join") as HTMLFormElement).addEventListener("submit", async (e) => {
    e.preventDefault();
    localStorage.setItem("tute.name", (document.getElementById("name") as HTMLInputElement).value.trim());
    await joinBy({ case: "inviteCode", value: code }, document.getElementById("msg") as HTMLElement);
  });
}

// ---------------------------------------------------------------------------------------------
// table

interface TableState {
  id: string;
  key: SeatKey | null;
  view: TableView | null;
  lastSeq: bigint;
  log: string[];
  message: string;
  showLast: boolean;
  connection: "connecting" | "live" | "reconnecting";
  sending: boolean;
}

function showTable(tableId: string): () => void {
  const st: TableState = {
    id: tableId, key: savedSeat(tableId), view: null, lastSeq: -1n, log: [], message: "",
    showLast: false, connection: "connecting", sending: false,
  };
  const abort = new AbortController();
  document.title = `Tute: mesa ${tableId}`;
  root.innerHTML = `<main class="table" id="table">
    <header class="bar"><a href="#/" class="small">← Mesas</a> <span id="title"></span>
      <span id="conn" class="conn" aria-live="polite"></span></header>
    <section id="seats" class="seats" aria-label="Jugadores"></section>
    <section class="middle">
      <div id="trick" class="trick" aria-label="Baza en juego" aria-live="polite"></div>
      <div id="side" class="side"></div>
    </section>
    <p id="turn" class="turn" aria-live="polite"></p>
    <section id="hand" class="hand" aria-label="Tu mano"></section>
    <section id="actions" class="actions" aria-label="Acciones"></section>
    <p id="msg" class="msg" role="alert"></p>
    <section id="scores" class="scores" aria-label="Puntuación"></section>
    <section id="waiting" class="waiting"></section>
    <details class="log"><summary>Eventos</summary><ol id="log"></ol></details>
  </main>`;
  const el = (id: string) => document.getElementById(id) as HTMLElement;

  let refreshing: Promise<void> | null = null;
  let again = false;
  const refresh = async (): Promise<void> => {
    if (refreshing) {
      again = true;
      return refreshing;
    }
    refreshing = (async () => {
      do {
        again = false;
        try {
          const res = await api.getTable({ tableId }, { ...bearer(st.key?.token, tableId), signal: abort.signal });
          const fresh = res.view;
          if (fresh && (!st.view || fresh.lastEventSequence >= st.view.lastEventSequence)
              && !(st.view && equals(TableViewSchema, fresh, st.view))) {
            st.view = fresh;
            render();
          }
        } catch (err) {
          if (abort.signal.aborted) return;
          showMessage(errorText(err));
        }
      } while (again);
    })();
    try {
      await refreshing;
    } finally {
      refreshing = null;
    }
  };

  const showMessage = (text: string) => {
    st.message = text;
    el("msg").textContent = text;
  };

  const follow = async () => {
    let backoff = 250;
    while (!abort.signal.aborted) {
      try {
        const req = st.lastSeq >= 0n ? { tableId, resumeAfter: st.lastSeq } : { tableId };
        for await (const msg of api.watchTable(req, { ...bearer(st.key?.token, tableId), signal: abort.signal })) {
          backoff = 250;
          if (st.connection !== "live") {
            st.connection = "live";
            renderConn();
          }
          if (msg.kind.case === "snapshot") {
            st.view = msg.kind.value;
            st.lastSeq = st.view.lastEventSequence;
            render();
          } else if (msg.kind.case === "event") {
            st.lastSeq = msg.kind.value.sequence;
            logEvent(msg.kind.value);
            void refresh();
          }
        }
      } catch (err) {
        if (abort.signal.aborted) return;
        const reason = errorReason(err);
        if (err instanceof ConnectError && (reason === "SEAT_LOST" || reason === "NOT_SEATED")) {
          forgetSeat(tableId);
          st.key = null;
          showMessage("Ya no ocupas este asiento: sigues la mesa como espectador.");
        } else if (err instanceof ConnectError && err.code === Code.NotFound) {
          showMessage(errorText(err));
          return;
        } else if (err instanceof ConnectError && err.code === Code.InvalidArgument) {
          st.lastSeq = -1n; // start again from a snapshot
        }
      }
      st.connection = "reconnecting";
      renderConn();
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 5000);
    }
  };

  const logEvent = (e: Event) => {
    st.log.push(`${e.sequence}: ${describe(e, st.view)}`);
    if (st.log.length > 40) st.log.shift();
    el("log").innerHTML = st.log.map((l) => `<li>${esc(l)}</li>`).join("");
  };

  const submit = async (action: Action["kind"]) => {
    if (st.sending || !st.key) return;
    st.sending = true;
    showMessage("");
    render(); // the cards are disabled while the action is on its way
    try {
      const res = await api.submitAction(
        { tableId, action: { kind: action }, requestId: crypto.randomUUID() },
        bearer(st.key.token, tableId),
      );
      if (res.view && (!st.view || res.view.lastEventSequence >= st.view.lastEventSequence)) st.view = res.view;
    } catch (err) {
      showMessage(errorText(err));
    } finally {
      st.sending = false;
      render();
    }
  };

  const renderConn = () => {
    if (abort.signal.aborted) return;
    const text = { connecting: "conectando…", live: "en directo", reconnecting: "reconectando…" }[st.connection];
    el("conn").textContent = text;
    el("conn").dataset.state = st.connection;
  };

  const render = () => {
    const v = st.view;
    if (!v || abort.signal.aborted) return; // (a call answered after the page left the table)
    const focused = (document.activeElement as HTMLElement | null)?.dataset?.key;
    el("table").dataset.seq = String(v.lastEventSequence);
    el("table").dataset.status = statusText(v.status);
    el("title").innerHTML = `${esc(v.rules?.preset ?? "")} · ${statusText(v.status)}`
      + (v.mySeat === undefined ? " · espectador" : "");
    renderSeats(v);
    renderTrick(v);
    renderSide(v);
    renderHand(v);
    renderActions(v);
    renderScores(v);
    renderWaiting(v);
    renderTurn();
    renderConn();
    if (focused) {
      const again = root.querySelector(`[data-key="${focused}"]`) as HTMLButtonElement | null;
      if (again && !again.disabled) again.focus();
      else if (focused.startsWith("card-")) root.querySelector<HTMLButtonElement>("#hand button.card:not([disabled])")?.focus();
    }
  };

  const seatName = (v: TableView, seat: number | undefined) => {
    if (seat === undefined) return "";
    const s = v.seats[seat];
    if (!s) return `asiento ${seat}`;
    return s.displayName || (s.occupant === OccupantKind.BOT ? `bot ${s.botLevel}` : `asiento ${seat}`);
  };

  const renderSeats = (v: TableView) => {
    el("seats").innerHTML = v.seats.map((s) => {
      const hand = v.seatHands.find((h) => h.seat === s.index);
      const me = v.mySeat === s.index;
      const turn = v.turnSeat === s.index && v.status === TableStatus.PLAYING;
      const who = s.occupant === OccupantKind.EMPTY ? "libre"
        : s.occupant === OccupantKind.BOT ? esc(s.displayName || `bot ${s.botLevel}`)
        : esc(s.displayName || "jugador");
      const online = s.occupant === OccupantKind.HUMAN
        ? `<span class="dot ${s.connected ? "on" : "off"}" title="${s.connected ? "conectado" : "desconectado"}"></span>
           <span class="sr">${s.connected ? "conectado" : "desconectado"}</span>` : "";
      return `<div class="seat ${me ? "me" : ""} ${turn ? "turn" : ""}" data-seat="${s.index}">
        <div class="who">${online}${who}${me ? " (tú)" : ""}</div>
        <div class="meta">${v.seats.length === 4 ? `pareja ${s.side + 1} · ` : ""}${hand?.handSize ?? 0} cartas · ${hand?.tricksWon ?? 0} bazas</div>
      </div>`;
    }).join("");
  };

  const renderTrick = (v: TableView) => {
    const trick: Trick | undefined = st.showLast ? v.completedTricks[v.completedTricks.length - 1] : v.currentTrick;
    const n = v.seats.length;
    const slots: string[] = [];
    for (let i = 0; i < n; i++) {
      const played = trick?.cards.find((c) => c.seat === i);
      slots.push(`<div class="slot" data-seat="${i}"><span class="slot-name">${esc(seatName(v, i))}</span>${
        played?.card ? `<div class="card" role="img" aria-label="${esc(cardName(played.card))}">${cardSvg(played.card)}</div>`
          : `<div class="card empty" aria-hidden="true"></div>`}</div>`);
    }
    el("trick").innerHTML = `<div class="slots n${n}">${slots.join("")}</div>
      <p class="caption">${st.showLast ? `Última baza${trick?.winner !== undefined ? `: la gana ${esc(seatName(v, trick.winner))}` : ""}` : `Baza ${trick?.number ?? ""}`}</p>`;
  };

  const renderSide = (v: TableView) => {
    const trump = v.trumpCard ?? v.turnedCard;
    el("side").innerHTML = `
      <div class="trump">${trump ? `<div class="card small" role="img" aria-label="Triunfo: ${esc(cardName(trump))}">${cardSvg(trump)}</div>`
        : `<div class="card small empty" aria-hidden="true"></div>`}
        <p>Triunfo<br><strong>${v.trumpSuit ? esc(suitName(v.trumpSuit)) : "—"}</strong></p></div>
      <div class="stock"><div class="card small back" aria-hidden="true">${cardBackSvg()}</div>
        <p>Mazo<br><strong id="stock">${v.stockSize}</strong></p></div>
      <button id="last" class="small" ${v.completedTricks.length ? "" : "disabled"} aria-pressed="${st.showLast}">Última baza</button>`;
    el("last").addEventListener("click", () => {
      st.showLast = !st.showLast;
      render();
    });
  };

  const legalCards = (v: TableView): Card[] =>
    v.legalActions.flatMap((a) => (a.kind.case === "playCard" ? [a.kind.value] : []));

  const renderHand = (v: TableView) => {
    if (v.mySeat === undefined) {
      el("hand").innerHTML = `<p class="caption">Mirando la mesa (sin asiento).</p>`;
      return;
    }
    const legal = legalCards(v);
    el("hand").innerHTML = `<div class="cards">${v.hand.map((c, i) => {
      const ok = !st.sending && legal.some((l) => l.suit === c.suit && l.rank === c.rank);
      return `<button class="card play ${ok ? "legal" : ""}" data-key="card-${c.suit}-${c.rank}"
        data-index="${i}" aria-label="${esc(cardName(c))}" ${ok ? "" : "disabled aria-disabled=\"true\""}>
        ${cardSvg(c)}<span class="num" aria-hidden="true">${i + 1}</span></button>`;
    }).join("")}</div>`;
  };

  const renderActions = (v: TableView) => {
    const buttons: string[] = [];
    for (const a of v.legalActions) {
      if (a.kind.case === "sing") {
        const points = a.kind.value === v.trumpSuit ? 40 : 20;
        buttons.push(`<button data-key="sing-${a.kind.value}" data-sing="${a.kind.value}" class="declare">
          <svg viewBox="-20 -22 40 44" aria-hidden="true">${suitPicture(a.kind.value)}</svg>Cantar las ${points} en ${esc(suitName(a.kind.value))}</button>`);
      } else if (a.kind.case === "declareTute") {
        const rank = a.kind.value.rank === 12 ? "reyes" : "caballos";
        buttons.push(`<button data-key="tute-${a.kind.value.rank}" data-tute="${a.kind.value.rank}" class="declare">Cantar tute de ${rank}</button>`);
      } else if (a.kind.case === "exchangeTrump") {
        buttons.push(`<button data-key="exchange" data-exchange="1" class="declare">Cambiar el triunfo</button>`);
      }
    }
    el("actions").innerHTML = buttons.join("");
  };

  const renderScores = (v: TableView) => {
    const rows = v.scores.map((s) => `<tr><th scope="row">${esc(s.seats.map((x) => seatName(v, x)).join(" y "))}</th>
      <td>${s.gameScore}</td><td>${s.gamesWon}</td><td>${s.matchPoints}</td><td>${s.handCardPoints + s.handCantePoints}</td></tr>`);
    let result = "";
    if (v.status === TableStatus.FINISHED && v.matchResult) {
      const winners = v.matchResult.winnerSeats.map((x) => seatName(v, x)).join(" y ");
      const mine = v.mySeat !== undefined && v.matchResult.winnerSeats.includes(v.mySeat);
      result = `<p class="final" id="final">Partida terminada: ${winners ? `gana ${esc(winners)}` : "empate"}${
        v.mySeat !== undefined ? (mine ? " ¡Has ganado!" : " Has perdido.") : ""}</p>
        <p><a id="replay-link" href="#/replay/${esc(v.tableId)}">Ver la repetición y comprobar el reparto</a></p>`;
    }
    const cantes = v.cantes.length
      ? `<p class="cantes">Cantes: ${v.cantes.map((c) => `${esc(seatName(v, c.seat))} ${c.points} en ${esc(suitName(c.suit))}`).join(", ")}</p>`
      : "";
    el("scores").innerHTML = `${result}${cantes}<table><thead><tr><th>Bando</th><th>Puntos</th><th>Juegos</th><th>Tantos</th><th>Mano</th></tr></thead>
      <tbody>${rows.join("")}</tbody></table>`;
  };

  const renderWaiting = (v: TableView) => {
    if (v.status !== TableStatus.WAITING) {
      el("waiting").innerHTML = "";
      return;
    }
    const link = v.inviteCode ? `${window.location.origin}${window.location.pathname}#/join/${v.inviteCode}` : "";
    el("waiting").innerHTML = `<p>Esperando jugadores…</p>
      ${v.inviteCode ? `<p>Invitación: <strong id="invite">${esc(v.inviteCode)}</strong> · <a href="${esc(link)}" id="invite-link">enlace</a></p>` : ""}
      <p>Mesa: <code id="table-id">${esc(v.tableId)}</code></p>
      ${st.key ? `<label>Nivel <select id="bot-level">${LEVELS.map((l) => `<option>${l}</option>`).join("")}</select></label>
        <button id="add-bot">Añadir un bot</button>` : ""}`;
    document.getElementById("add-bot")?.addEventListener("click", async () => {
      try {
        const level = (document.getElementById("bot-level") as HTMLSelectElement).value;
        await api.addBot({ tableId, level }, bearer(st.key?.owner ?? st.key?.token, tableId));
      } catch (err) {
        showMessage(errorText(err));
      }
    });
  };

  const renderTurn = () => {
    const v = st.view;
    if (!v) return;
    if (v.status !== TableStatus.PLAYING || v.turnSeat === undefined) {
      el("turn").textContent = v.status === TableStatus.FINISHED ? "" : "\u00a0";
      return;
    }
    const who = v.turnSeat === v.mySeat ? "Te toca" : `Turno de ${seatName(v, v.turnSeat)}`;
    let clock = "";
    if (v.turnDeadline) {
      const ms = Number(v.turnDeadline.seconds) * 1000 + v.turnDeadline.nanos / 1e6 - Date.now();
      clock = ` · ${Math.max(0, Math.ceil(ms / 1000))} s`;
    }
    el("turn").textContent = who + clock;
  };

  // clicks and keys
  root.addEventListener("click", onClick);
  function onClick(e: MouseEvent): void {
    const target = (e.target as HTMLElement).closest("button") as HTMLButtonElement | null;
    if (!target || target.disabled || !st.view) return;
    if (target.classList.contains("play")) {
      const card = st.view.hand[Number(target.dataset.index)];
      if (card && legalCards(st.view).some((l) => l.suit === card.suit && l.rank === card.rank)) {
        void submit({ case: "playCard", value: card });
      }
    } else if (target.dataset.sing) {
      void submit({ case: "sing", value: Number(target.dataset.sing) });
    } else if (target.dataset.tute) {
      void submit({ case: "declareTute", value: { $typeName: "tute.v1.DeclareTute", rank: Number(target.dataset.tute) } });
    } else if (target.dataset.exchange) {
      void submit({ case: "exchangeTrump", value: { $typeName: "tute.v1.ExchangeTrump" } });
    }
  }
  const onKey = (e: KeyboardEvent) => {
    if (!st.view || (e.target as HTMLElement).closest("input, select, textarea")) return;
    const cards = Array.from(root.querySelectorAll<HTMLButtonElement>("#hand button.card"));
    if (/^[1-9]$/.test(e.key)) {
      const btn = cards[Number(e.key) - 1];
      if (btn && !btn.disabled) btn.click();
    } else if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      const enabled = cards.filter((b) => !b.disabled);
      if (!enabled.length) return;
      const at = enabled.indexOf(document.activeElement as HTMLButtonElement);
      const next = e.key === "ArrowRight" ? (at + 1) % enabled.length : (at - 1 + enabled.length) % enabled.length;
      enabled[at < 0 ? 0 : next].focus();
      e.preventDefault();
    }
  };
  document.addEventListener("keydown", onKey);
  const timer = window.setInterval(renderTurn, 500);

  void follow();
  return () => {
    abort.abort();
    window.clearInterval(timer);
    root.removeEventListener("click", onClick);
    document.removeEventListener("keydown", onKey);
  };
}

function statusText(s: TableStatus): string {
  return { [TableStatus.WAITING]: "esperando", [TableStatus.PLAYING]: "en juego", [TableStatus.FINISHED]: "terminada" }[s as number] ?? "";
}

function describe(e: Event, v: TableView | null): string {
  const name = (seat: number) => v?.seats[seat]?.displayName || `asiento ${seat}`;
  switch (e.kind.case) {
    case "cardPlayed": return `${name(e.kind.value.seat)} juega ${e.kind.value.card ? cardName(e.kind.value.card) : ""}`;
    case "trickTaken": return `${name(e.kind.value.trick?.winner ?? 0)} se lleva la baza`;
    case "canteSung": return `${name(e.kind.value.cante?.seat ?? 0)} canta las ${e.kind.value.cante?.points ?? ""}`;
    case "tuteDeclared": return "¡tute!";
    case "trumpExchanged": return `${name(e.kind.value.seat)} cambia el triunfo`;
    case "seatJoined": return `${name(e.kind.value.seat?.index ?? 0)} se sienta`;
    case "seatLeft": return `asiento ${e.kind.value.seat} libre`;
    case "matchStarted": return "empieza la partida";
    case "handDealt": return "se reparten las cartas";
    case "turnStarted": return `turno de ${name(e.kind.value.seat)}`;
    case "turnTimedOut": return `a ${name(e.kind.value.seat)} se le acabó el tiempo`;
    case "handScored": return "mano contada";
    case "gameEnded": return "juego terminado";
    case "playerForfeited": return `${name(e.kind.value.seat)} abandona`;
    case "matchEnded": return "partida terminada";
    default: return "";
  }
}

route();
