// The browser's tute-shuffle-v1 (src/fair.ts, compiled by `npm test` into .test-build/)
// against the published vectors of docs/fair-deals-vectors.json, and a tampered seed, client
// seed or pack refused. Run: `npm test` (node's own test runner, WebCrypto of node).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { cardNumber, cardText, commitmentOf, dealMessage, hexBytes, shuffle, toHex, verifyDeal } from "../.test-build/fair.js";

const vectors = JSON.parse(readFileSync(new URL("../../../docs/fair-deals-vectors.json", import.meta.url), "utf8"));

test("the vectors' algorithm is the one implemented", () => {
  assert.equal(vectors.algorithm, "tute-shuffle-v1");
  assert.ok(vectors.vectors.length >= 5);
});

for (const [i, v] of vectors.vectors.entries()) {
  test(`vector ${i} (${v.preset}, hand ${v.hand_no}): commitment, message, block 0 and pack`, async () => {
    const seed = hexBytes(v.server_seed);
    assert.equal(await commitmentOf(seed), v.commitment);
    const message = dealMessage(v.hand_no, v.players === 3 ? 39 : 40, v.client_seeds);
    assert.equal(toHex(message), v.message);
    const key = await crypto.subtle.importKey("raw", seed, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const block0 = new Uint8Array(await crypto.subtle.sign("HMAC", key, new Uint8Array([...message, 0, 0, 0, 0])));
    assert.equal(toHex(block0), v.block_0);
    const pack = await shuffle(seed, v.client_seeds, v.hand_no, v.players);
    assert.deepEqual(pack, v.pack);
    assert.equal(pack.map(cardText).join(" "), v.pack_text);
    assert.deepEqual(v.pack_text.split(" ").map(cardNumber), v.pack);
    const deal = { handNumber: v.hand_no, commitment: v.commitment, serverSeed: v.server_seed, clientSeeds: v.client_seeds, pack: v.pack_text.split(" ") };
    assert.equal(await verifyDeal(deal, v.players), "");
  });
}

test("a changed seed, client seed, hand number or pack is refused", async () => {
  const v = vectors.vectors[1];
  const deal = { handNumber: v.hand_no, commitment: v.commitment, serverSeed: v.server_seed, clientSeeds: v.client_seeds, pack: v.pack_text.split(" ") };
  const flip = (hex) => (hex[0] === "0" ? "1" : "0") + hex.slice(1);
  assert.match(await verifyDeal({ ...deal, serverSeed: flip(v.server_seed) }, v.players), /does not match the commitment/);
  assert.match(await verifyDeal({ ...deal, commitment: flip(v.commitment) }, v.players), /does not match the commitment/);
  assert.match(await verifyDeal({ ...deal, clientSeeds: [...v.client_seeds.slice(0, -1), "x"] }, v.players), /not the shuffle/);
  assert.match(await verifyDeal({ ...deal, handNumber: v.hand_no + 1 }, v.players), /not the shuffle/);
  const swapped = [deal.pack[1], deal.pack[0], ...deal.pack.slice(2)];
  assert.match(await verifyDeal({ ...deal, pack: swapped }, v.players), /not the shuffle/);
  assert.match(await verifyDeal({ ...deal, serverSeed: "zz" }, v.players), /not 64 hex digits/);
});
