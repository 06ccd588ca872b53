/**
 * GET /v3/x402/dashboard/overview answers the overview itself: the recent
 * payments with their file, dollars and explorer link, and the names the page
 * shows (the read awaits the stores; an answer holding the unresolved
 * promise was serialized as `{"data":{}}`).
 *
 * SQLite here: the overview only reads the stores (payments, entitlements,
 * instructions, notifications), so on PostgreSQL it is what the PostgreSQL
 * stores answer, tested with them.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { FacilitatorUnavailableError } from "../../src/facilitator/types";
import { createToken } from "../../src/http/token";
import { addContent, type Fixture, fixture, JWT_SECRET, makeApp, price } from "../gateway/fixtures";
import { claim } from "../ledger/claims";

const TX = `0x${"ab".repeat(32)}`;

describe("the dashboard's overview", () => {
  let f: Fixture;
  beforeEach(() => {
    f = fixture();
  });
  afterEach(() => f.cleanup());

  test("names each recent payment's file and instruction, in dollars, linked to the explorer", async () => {
    const { "song.mp3": cid } = await addContent(f, { "song.mp3": "some music" });
    const instruction = await price(
      f,
      cid,
      [{ payTo: "0x2222222222222222222222222222222222222222", amount: "10000" }],
      "Songs",
    );
    const paid = await f.stores.payments.claim(
      claim({ cid, instructionId: instruction.id, amount: "10000" }), // USDC on base-sepolia
    );
    await f.stores.payments.markSettled(paid.payment.id, TX);
    const down = async (): Promise<never> => {
      throw new FacilitatorUnavailableError("not used");
    };
    const app = makeApp(f, { verify: down, settle: down, supported: down });
    const token = await createToken(JWT_SECRET, { scopes: ["read"], ttlSeconds: 600 });
    const res = await app.handle(
      new Request("http://localhost/v3/x402/dashboard/overview", { headers: { authorization: `Bearer ${token}` } }),
    );
    expect(res.status).toBe(200);
    const { data } = await res.json();
    expect(data.recent_payments).toHaveLength(1);
    expect(data.recent_payments[0]).toMatchObject({
      cid,
      path: "song.mp3",
      payment_instruction_id: instruction.id,
      amount: "10000",
      usd: "0.01",
      state: "settled",
      status: "settled",
      explorer_url: `https://sepolia.basescan.org/tx/${TX}`,
    });
    expect(data.instruction_names).toEqual({ [instruction.id]: "Songs" });
    expect(data.paths).toEqual({ [cid]: "song.mp3" });
    expect(data.attention.pending).toEqual([]);
  });
});
