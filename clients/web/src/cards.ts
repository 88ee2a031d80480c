// Spanish cards drawn in SVG by the client (nothing downloaded): the four suits' pictures,
// the rank in the corners, and the accessible name of a card ("3 de espadas").
import { Suit } from "./gen/tute/v1/card_pb";
import type { Card } from "./gen/tute/v1/card_pb";

export const SUIT_NAMES: Record<number, string> = {
  [Suit.OROS]: "oros",
  [Suit.COPAS]: "copas",
  [Suit.ESPADAS]: "espadas",
  [Suit.BASTOS]: "bastos",
};

const RANK_NAMES: Record<number, string> = { 1: "as", 10: "sota", 11: "caballo", 12: "rey" };
const RANK_MARKS: Record<number, string> = { 1: "1", 10: "S", 11: "C", 12: "R" };
const SUIT_COLOURS: Record<number, string> = {
  [Suit.OROS]: "#c99a06",
  [Suit.COPAS]: "#c0262d",
  [Suit.ESPADAS]: "#1f5fa8",
  [Suit.BASTOS]: "#2f7d32",
};

/** "3 de espadas", "rey de oros": what a screen reader says for a card. */
export function cardName(card: Card): string {
  const rank = RANK_NAMES[card.rank] ?? String(card.rank);
  return `${rank} de ${SUIT_NAMES[card.suit] ?? "?"}`;
}

export function suitName(suit: Suit): string {
  return SUIT_NAMES[suit] ?? "?";
}

/** The picture of a suit, centred on (0,0), about 40 units tall. */
export function suitPicture(suit: Suit): string {
  const c = SUIT_COLOURS[suit] ?? "#444";
  switch (suit) {
    case Suit.OROS: // a gold coin
      return `<circle r="17" fill="${c}" stroke="#7a5b00" stroke-width="2"/>
        <circle r="11" fill="none" stroke="#fff3b0" stroke-width="2"/>
        <circle r="4" fill="#7a5b00"/>`;
    case Suit.COPAS: // a cup
      return `<path d="M-15,-16 H15 Q15,4 3,8 V14 H9 V18 H-9 V14 H-3 V8 Q-15,4 -15,-16 Z"
        fill="${c}" stroke="#6d1015" stroke-width="2"/>
        <path d="M-10,-11 H10" stroke="#f7c5c7" stroke-width="2"/>`;
    case Suit.ESPADAS: // a sword, point up
      return `<path d="M0,-20 L5,-12 V8 H-5 V-12 Z" fill="#cfd8e3" stroke="${c}" stroke-width="2"/>
        <rect x="-12" y="8" width="24" height="4" rx="2" fill="${c}"/>
        <rect x="-2.5" y="12" width="5" height="7" fill="${c}"/>`;
    case Suit.BASTOS: // a club
      return `<path d="M-4,20 L-7,-10 Q-8,-20 0,-20 Q8,-20 7,-10 L4,20 Z" fill="${c}"
        stroke="#174a19" stroke-width="2"/>
        <circle cx="-3" cy="-8" r="2" fill="#a5d6a7"/><circle cx="3" cy="2" r="2" fill="#a5d6a7"/>`;
    default:
      return "";
  }
}

/** The SVG of a card's face (70 x 105 units). */
export function cardSvg(card: Card): string {
  const mark = RANK_MARKS[card.rank] ?? String(card.rank);
  const c = SUIT_COLOURS[card.suit] ?? "#444";
  return `<svg viewBox="0 0 70 105" aria-hidden="true" focusable="false">
    <rect x="1" y="1" width="68" height="103" rx="7" fill="#fffdf6" stroke="#8a7f6a" stroke-width="2"/>
    <rect x="6" y="6" width="58" height="93" rx="4" fill="none" stroke="${c}" stroke-width="1"
      stroke-dasharray="4 3"/>
    <text x="9" y="21" font-size="15" font-weight="700" fill="${c}">${mark}</text>
    <text x="61" y="96" font-size="15" font-weight="700" fill="${c}" text-anchor="end">${mark}</text>
    <g transform="translate(35 54)">${suitPicture(card.suit)}</g>
  </svg>`;
}

/** The back of a card (an opponent's, or the stock). */
export function cardBackSvg(): string {
  return `<svg viewBox="0 0 70 105" aria-hidden="true" focusable="false">
    <rect x="1" y="1" width="68" height="103" rx="7" fill="#7b2130" stroke="#3c0f17" stroke-width="2"/>
    <rect x="7" y="7" width="56" height="91" rx="4" fill="none" stroke="#e9c46a" stroke-width="2"/>
    <circle cx="35" cy="52" r="12" fill="none" stroke="#e9c46a" stroke-width="2"/>
  </svg>`;
}
