// The server, over the Connect protocol (connect-web) on the page's own origin, and the seat
// tokens this browser holds (localStorage, one entry per table, so a reload returns to the seat).
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import type { Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { TuteService } from "./gen/tute/v1/service_pb";

export type Tute = Client<typeof TuteService>;

export function connect(baseUrl: string): Tute {
  return createClient(TuteService, createConnectTransport({ baseUrl, useBinaryFormat: true }));
}

export interface SeatKey {
  token: string;
  seat: number;
  owner?: string;
}

const KEY = (tableId: string) => `tute.seat.${tableId}`;

export function savedSeat(tableId: string): SeatKey | null {
  try {
    const raw = localStorage.getItem(KEY(tableId));
    return raw ? (JSON.parse(raw) as SeatKey) : null;
  } catch {
    return null;
  }
}

export function saveSeat(tableId: string, key: SeatKey): void {
  localStorage.setItem(KEY(tableId), JSON.stringify(key));
}

export function forgetSeat(tableId: string): void {
  localStorage.removeItem(KEY(tableId));
}

/** The metadata a call about a table carries: a proxy in front of several servers hashes on it
 * so that all of one table's calls reach one server (docs/frontend.md, "Routing"). */
export const TABLE_HEADER = "tute-table-id";

/** A call's headers: the token as `authorization: Bearer` if any, and `tute-table-id` when the
 * call is about a table. */
export function bearer(token: string | undefined, tableId?: string): { headers?: Record<string, string> } {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (tableId) headers[TABLE_HEADER] = tableId;
  return Object.keys(headers).length ? { headers } : {};
}

/** The ErrorInfo reason of a refused call ("MUST_FOLLOW_SUIT"), "" when it has none. */
export function errorReason(err: unknown): string {
  if (!(err instanceof ConnectError)) return "";
  for (const d of err.details) {
    if ("type" in d && d.type === "google.rpc.ErrorInfo" && "value" in d) {
      const r = new BinaryReader(d.value);
      while (r.pos < r.len) {
        const [no, wire] = r.tag();
        if (no === 1) return r.string();
        r.skip(wire);
      }
    }
  }
  return "";
}

/** The text to show for a refused call: the server's message (which never names a hidden
 * card), with its reason code. */
export function errorText(err: unknown): string {
  if (err instanceof ConnectError) {
    const reason = errorReason(err);
    return reason ? `${err.rawMessage} (${reason})` : err.rawMessage;
  }
  return String(err);
}

export { Code, ConnectError };
