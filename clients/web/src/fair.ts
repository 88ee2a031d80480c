// Fair deals checked in the browser: the "tute-shuffle-v1" commitment and shuffle of
// docs/fair-deals.md, byte for byte, with WebCrypto (SHA-256 and HMAC-SHA256). Nothing here
// trusts the server: a hand's pack is recomputed from its revealed seed and client seeds.

export const ALGORITHM = "tute-shuffle-v1";

const SUIT_LETTERS = ["O", "C", "E", "B"];
const RANKS = [1, 2, 3, 4, 5, 6, 7, 10, 11, 12];
const ENC = new TextEncoder();

/** A card number (suit * 10 + rank index) as its text: 0 is "1O", 39 is "12B". */
export function cardText(n: number): string {
  return `${RANKS[n % 10]}${SUIT_LETTERS[Math.floor(n / 10)]}`;
}

/** The card number of a card text ("3E"), or -1 when it is not one. */
export function cardNumber(text: string): number {
  const m = /^(\d{1,2})([OCEB])$/.exec(text);
  if (!m) return -1;
  const rank = RANKS.indexOf(Number(m[1]));
  return rank < 0 ? -1 : SUIT_LETTERS.indexOf(m[2]) * 10 + rank;
}

/** The 32 bytes of 64 hex digits, or null when the text is not that. */
export function hexBytes(hex: string): Uint8Array | null {
  if (!/^[0-9a-f]{64}$/.test(hex)) return null;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function u32(x: number): Uint8Array {
  return new Uint8Array([(x >>> 24) & 255, (x >>> 16) & 255, (x >>> 8) & 255, x & 255]);
}

/** SHA-256("tute-shuffle-v1\0commit\0" || seed), as 64 hex digits. */
export async function commitmentOf(seed: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", concat(ENC.encode(`${ALGORITHM}\0commit\0`), seed));
  return toHex(new Uint8Array(digest));
}

/** The shuffle's message: the hand number, the pack size and every seat's client seed. */
export function dealMessage(handNo: number, packSize: number, clientSeeds: string[]): Uint8Array {
  const seeds = clientSeeds.map((s) => {
    const b = ENC.encode(s);
    if (b.length > 64) throw new Error("a client seed is longer than 64 bytes");
    return concat(new Uint8Array([b.length]), b);
  });
  return concat(ENC.encode(`${ALGORITHM}\0deal\0`), u32(handNo), new Uint8Array([packSize, clientSeeds.length]), ...seeds);
}

/** The cards in play in card-number order: 40, or 39 without the 2 of oros in 3p. */
export function packFor(players: number): number[] {
  return Array.from({ length: 40 }, (_, i) => i).filter((c) => players !== 3 || c !== 1);
}

/** The hand's pack in deal order: a Fisher-Yates shuffle driven by the HMAC-SHA256 stream of
 * the seed over the message, with rejection sampling. */
export async function shuffle(seed: Uint8Array, clientSeeds: string[], handNo: number, players: number): Promise<number[]> {
  const cards = packFor(players);
  const message = dealMessage(handNo, cards.length, clientSeeds);
  const key = await crypto.subtle.importKey("raw", concat(seed), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  let block = new Uint8Array(0);
  let blockNo = 0;
  let at = 0;
  const next = async (): Promise<number> => {
    if (at === block.length) {
      block = new Uint8Array(await crypto.subtle.sign("HMAC", key, concat(message, u32(blockNo))));
      blockNo++;
      at = 0;
    }
    return block[at++];
  };
  for (let i = cards.length - 1; i >= 1; i--) {
    const bound = i + 1;
    const limit = 256 - (256 % bound);
    let b = await next();
    while (b >= limit) b = await next();
    const j = b % bound;
    [cards[i], cards[j]] = [cards[j], cards[i]];
  }
  return cards;
}

export interface HandDeal {
  handNumber: number;
  commitment: string;
  serverSeed: string;
  clientSeeds: string[];
  pack: string[];
}

/** Why a hand's deal does not check out ("" when it does): the seed against the commitment,
 * then the recorded pack against the shuffle of the seed and the client seeds. */
export async function verifyDeal(hand: HandDeal, players: number): Promise<string> {
  const seed = hexBytes(hand.serverSeed);
  if (!seed) return `hand ${hand.handNumber}: the server seed is not 64 hex digits`;
  if ((await commitmentOf(seed)) !== hand.commitment) {
    return `hand ${hand.handNumber}: the seed does not match the commitment`;
  }
  let pack: number[];
  try {
    pack = await shuffle(seed, hand.clientSeeds, hand.handNumber, players);
  } catch (err) {
    return `hand ${hand.handNumber}: ${String(err)}`;
  }
  if (pack.map(cardText).join(" ") !== hand.pack.join(" ")) {
    return `hand ${hand.handNumber}: the recorded pack is not the shuffle of its seeds`;
  }
  return "";
}
