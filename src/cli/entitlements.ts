/**
 * `cidgate entitlements list|grant|revoke`: the management API's entitlement
 * calls for a shell on the server, writing the database at CIDGATE_DB
 * through the entitlements store (the table's one writer), with the same
 * checks as the API: the instruction must exist, a CID must be one of its.
 * A running server sees the rows at once: it asks the table on every use.
 */
import { canonicalCid } from "../content/cid";
import { checkGrantTarget } from "../entitlements/grant-target";
import { parseAccessPolicy } from "../entitlements/policy";
import { type Entitlement, isActive } from "../entitlements/store";
import { grid } from "../grid";
import { defineCommand, defineGroup, UsageError } from "./command";
import { withStores } from "./with-stores";

const nowSeconds = () => Math.floor(Date.now() / 1000);
const ADDRESS = /^0[xX][0-9a-fA-F]{40}$/;

function state(e: Entitlement, now: number): string {
  if (e.revokedAt) return `revoked ${e.revokedAt}`;
  return isActive(e, now) ? "active" : "expired";
}

function describe(e: Entitlement, now: number): [string, string, string, string, string, string] {
  return [
    String(e.id),
    e.payer,
    e.scope === "cid" ? `cid ${e.cid}` : `instruction ${e.instructionId}`,
    e.source === "payment" ? `payment ${e.paymentId}` : "grant",
    e.expiresAt === null ? "never" : new Date(e.expiresAt * 1000).toISOString(),
    state(e, now),
  ];
}

const list = defineCommand({
  name: "entitlements list",
  summary: "list entitlements, newest first",
  options: {
    payer: { type: "string", value: "<address>", description: "only this wallet's" },
    cid: { type: "string", value: "<cid>", description: "only entitlements to this CID (any spelling)" },
  },
  notes: "Columns: id, payer, what it covers, where it came from, expiry, state. The database is CIDGATE_DB.",
  async run({ values, who }) {
    if (values.payer !== undefined && !ADDRESS.test(values.payer))
      throw new UsageError(`--payer ${JSON.stringify(values.payer)} is not a 0x-prefixed 20-byte hex address`);
    const cid = values.cid === undefined ? undefined : canonical(values.cid);
    return withStores(who, async (stores) => {
      const now = nowSeconds();
      const rows: string[][] = [];
      let afterId: number | undefined;
      do {
        const page = await stores.entitlements.list({ payer: values.payer, cid }, { limit: 1000, afterId });
        for (const e of page.items) rows.push(describe(e, now));
        afterId = page.nextAfterId;
      } while (afterId !== undefined);
      if (rows.length === 0) {
        console.error("no entitlements");
        return 0;
      }
      console.log(grid([["id", "payer", "covers", "from", "expires", "state"], ...rows]));
      return 0;
    });
  },
});

/** The canonical CID, as the API stores it; a usage error naming the option otherwise. */
function canonical(text: string): string {
  const cid = canonicalCid(text);
  if (!cid) throw new UsageError(`--cid ${JSON.stringify(text)} is not a CID (v0 Qm... or v1)`);
  return cid;
}

const grant = defineCommand({
  name: "entitlements grant",
  summary: "let a wallet download without paying (a gift, a refund made good); prints the new id",
  options: {
    payer: { type: "string", value: "<address>", description: "the wallet (required)" },
    instruction: { type: "string", value: "<id>", description: "the payment instruction it is under (required)" },
    cid: { type: "string", value: "<cid>", description: "one CID of the instruction (default: every CID of it)" },
    expires: { type: "string", value: "<ISO time>", description: "when it ends, e.g. 2027-01-01T00:00:00Z" },
    for: { type: "string", value: "<duration>", description: "how long from now: 30d, 12h, 2w, 90m (or forever)" },
    note: { type: "string", value: "<text>", description: "why, for the list" },
  },
  notes: "Without --expires or --for it never ends. The database is CIDGATE_DB.",
  async run({ values, who }) {
    if (values.payer === undefined) throw new UsageError("--payer is required");
    if (!ADDRESS.test(values.payer))
      throw new UsageError(`--payer ${JSON.stringify(values.payer)} is not a 0x-prefixed 20-byte hex address`);
    if (values.instruction === undefined) throw new UsageError("--instruction is required");
    if (values.expires !== undefined && values.for !== undefined)
      throw new UsageError("give --expires or --for, not both");
    const now = nowSeconds();
    let expiresAt: number | null = null;
    if (values.expires !== undefined) {
      const ms = Date.parse(values.expires);
      if (Number.isNaN(ms)) throw new UsageError(`--expires ${JSON.stringify(values.expires)} is not an ISO 8601 time`);
      expiresAt = Math.floor(ms / 1000);
      if (expiresAt <= now) throw new UsageError(`--expires ${values.expires} is not in the future`);
    }
    if (values.for !== undefined) {
      const policy = parseAccessPolicy(values.for);
      if (!policy || policy.kind === "once")
        throw new UsageError(
          `--for needs a whole number with a unit m, h, d or w, or forever (got ${JSON.stringify(values.for)})`,
        );
      expiresAt = policy.kind === "for" ? now + policy.seconds : null;
    }
    const cid = values.cid === undefined ? undefined : canonical(values.cid);
    return withStores(who, async (stores) => {
      const target = await checkGrantTarget(stores.instructions, values.instruction!, cid);
      const e = await stores.entitlements.grant(
        { payer: values.payer!, cid: target.cid, instructionId: target.instructionId, expiresAt, note: values.note },
        now,
      );
      const [, payer, covers, , expires] = describe(e, now);
      console.error(`granted ${payer} ${covers}, expires ${expires}`);
      console.log(e.id);
      return 0;
    });
  },
});

const revoke = defineCommand({
  name: "entitlements revoke",
  summary: "revoke an entitlement (after a refund): the next download charges again",
  arguments: [{ name: "id", description: "the entitlement's id (see cidgate entitlements list)" }],
  notes: "Revoking twice keeps the first time. The database is CIDGATE_DB.",
  async run({ positionals: [id], who }) {
    if (!/^[0-9]{1,15}$/.test(id)) throw new UsageError(`${JSON.stringify(id)} is not an entitlement id`);
    return withStores(who, async (stores) => {
      const now = nowSeconds();
      const e = await stores.entitlements.revoke(Number(id), now);
      if (!e) {
        console.error(`${who}: no entitlement ${id}`);
        return 1;
      }
      const [, payer, covers] = describe(e, now);
      console.log(`revoked ${e.id} (${payer} ${covers}) at ${e.revokedAt}`);
      return 0;
    });
  },
});

export const command = defineGroup("entitlements", "who may download without paying again", [list, grant, revoke]);
