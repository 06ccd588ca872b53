/**
 * Malformed input (issue 10, "A reliability suite"): 1,000 malformed
 * management requests and 1,000 malformed payment headers against the
 * production server on a devnet. Every one must get a 4xx in the one JSON
 * shape: a 5xx (of any body) or a 2xx to a write counts as wrong, and the
 * database must not change at all (a digest of every table, before and after).
 */
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createToken } from "../../src/http/auth";
import { pruneRefusedRows, REFUSED_ROW_RETENTION_MS } from "../../src/ledger/prune";
import { signProof } from "../../test/gateway/fixtures";
import type { ChaosCase, ChaosRow } from "../case";
import {
  changedTables,
  createTestStack,
  databaseDigest,
  isPlainServerError,
  STACK_JWT_SECRET,
  seededRandom,
} from "../lib/stack";

const N = Number(process.env.CHAOS_MALFORMED ?? 1000);
const PREFIX = "/v3/x402/payment_instructions";

const malformed: ChaosCase = async () => {
  const rand = seededRandom();
  const stack = await createTestStack({ files: { "a.txt": "chaos\n" }, buyers: 1 });
  try {
    const rw = await createToken(STACK_JWT_SECRET, { scopes: ["read", "write"], ttlSeconds: 3600 });
    const readOnly = await createToken(STACK_JWT_SECRET, { scopes: ["read"], ttlSeconds: 3600 });
    const otherSecret = await createToken("x".repeat(40), { scopes: ["read", "write"], ttlSeconds: 3600 });
    const expired = await createToken(STACK_JWT_SECRET, {
      scopes: ["read", "write"],
      ttlSeconds: 60,
      now: Math.floor(Date.now() / 1000) - 3600,
    });
    const id = stack.instruction.id;
    const good = {
      network: "base-sepolia",
      asset: stack.devnet.token,
      pay_to: stack.devnet.seller.address,
      amount: "10000",
    };

    /** Each returns a request with at least one defect. */
    const requirementDefects: (() => unknown)[] = [
      () => ({ ...good, extra: rand.int(100) }),
      () => ({ ...good, network: rand.pick(["", "base-mainnet", "eip155:1", 8453, null]) }),
      () => ({
        ...good,
        asset: rand.pick(["0x", "0x1234", "USDC", getAddress(privateKeyToAccount(generatePrivateKey()).address)]),
      }),
      () => ({ ...good, pay_to: rand.pick(["", "0xzz", "0x0000000000000000000000000000000000000000", 42]) }),
      () => ({ ...good, amount: rand.pick(["0", "-1", "1.5", "1e6", "", "abc", 1.5, -3, `${"9".repeat(80)}`]) }),
      () => ({ ...good, amount: undefined }),
      () => ({ ...good, amount: "10000", max_amount_required: "20000" }),
      () => ({ ...good, description: "d".repeat(2000 + rand.int(2000)) }),
      () => rand.pick([null, "text", 7, [], [good]]),
    ];
    const bodyDefects: (() => unknown)[] = [
      () => ({ name: "x", payment_requirements: [rand.pick(requirementDefects)()] }),
      () => ({ name: rand.pick(["", 5, null, "n".repeat(1000)]), payment_requirements: [good] }),
      () => ({ payment_requirements: [good] }),
      () => ({ name: "x", payment_requirements: [] }),
      () => ({ name: "x", payment_requirements: Array.from({ length: 50 + rand.int(50) }, () => good) }),
      () => ({ name: "x", payment_requirements: [good], access: rand.pick(["sometimes", "0d", "-1d", "", 30]) }),
      () => ({ name: "x", payment_requirements: [good], access_scope: rand.pick(["all", "", 1]) }),
      () => ({ name: "x", payment_requirements: [good, good] }), // the same network, asset and receiver twice
      () => rand.pick([[], "string", 12, true]),
    ];
    const patchDefects: (() => unknown)[] = [
      () => ({ payment_requirements: [rand.pick(requirementDefects)()] }),
      () => ({ name: rand.pick(["", 5, "n".repeat(1000)]) }),
      () => ({ access: "forever-ish" }),
      () => ({ description: 42 }),
    ];

    type Made = { method: string; path: string; headers: Record<string, string>; body?: string };
    const json = (v: unknown) => JSON.stringify(v);
    const auth = (token: string) => ({ Authorization: `Bearer ${token}`, "Content-Type": "application/json" });
    const requests: (() => Made)[] = [
      () => ({ method: "POST", path: PREFIX, headers: auth(rw), body: json(rand.pick(bodyDefects)()) }),
      () => ({ method: "PATCH", path: `${PREFIX}/${id}`, headers: auth(rw), body: json(rand.pick(patchDefects)()) }),
      () => ({
        method: "PATCH",
        path: `${PREFIX}/${crypto.randomUUID()}`,
        headers: auth(rw),
        body: json({ name: "renamed" }),
      }),
      () => ({
        method: "DELETE",
        path: `${PREFIX}/${rand.pick(["nope", crypto.randomUUID(), "%00", "..%2f"])}`,
        headers: auth(rw),
      }),
      () => ({
        method: "PUT",
        path: `${PREFIX}/${id}/cids/${rand.pick(["notacid", "Qm", "bafy", "%2e%2e", "x".repeat(300)])}`,
        headers: auth(rw),
      }),
      () => ({
        method: "POST",
        path: PREFIX,
        headers: auth(rw),
        body: json({ name: "x", payment_requirements: [good] }).slice(0, 5 + rand.int(40)),
      }),
      () => ({
        method: "POST",
        path: PREFIX,
        headers: { Authorization: `Bearer ${rw}`, "Content-Type": rand.pick(["text/plain", "application/xml", ""]) },
        body: json({ name: "x", payment_requirements: [good] }),
      }),
      () => ({
        method: "POST",
        path: PREFIX,
        headers: auth(rand.pick([readOnly, otherSecret, expired, "garbage", ""])),
        body: json({ name: "x", payment_requirements: [good] }),
      }),
      () => ({ method: "POST", path: PREFIX, headers: auth(rw), body: Buffer.from(rand.bytes(64)).toString("latin1") }),
      () => ({
        method: "GET",
        path: `${PREFIX}?limit=${rand.pick(["-1", "0", "abc", "100000"])}&pageToken=${rand.pick(["x", "%ff", "eyJ9"])}`,
        headers: auth(rw),
      }),
      () => ({
        method: "POST",
        path: "/v3/x402/entitlements",
        headers: auth(rw),
        body: json(rand.pick([{}, { payer: "0x12" }, { payer: good.pay_to, cid: "nope" }, []])),
      }),
    ];

    const before = databaseDigest(stack.db);
    let managementWrong = 0;
    let managementPlain = 0;
    for (let i = 0; i < N; i++) {
      const r = rand.pick(requests)();
      const res = await fetch(`${stack.url}${r.path}`, { method: r.method, headers: r.headers, body: r.body });
      if (await isPlainServerError(res)) managementPlain++;
      const wrote = r.method !== "GET" && res.status < 300;
      if (res.status >= 500 || wrote) managementWrong++;
      await res.arrayBuffer();
    }
    const managementChanged = changedTables(before, databaseDigest(stack.db));

    // Payment headers: garbage, broken encodings, wrong shapes, and well-formed proofs with bad signatures.
    const proof = await signProof({
      version: 2,
      account: privateKeyToAccount(stack.devnet.buyers[0].privateKey),
      asset: stack.devnet.token,
      payTo: stack.devnet.seller.address,
      amount: "10000",
    });
    const payload = proof.payload as { payload: { signature: string; authorization: Record<string, unknown> } };
    const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64");
    const headerDefects: (() => string)[] = [
      () => Buffer.from(rand.bytes(1 + rand.int(300))).toString("base64"),
      () => "!!!not base64!!!",
      () => b64(JSON.stringify(payload).slice(0, rand.int(200))),
      () => b64({ ...payload, x402Version: rand.pick(["2", 3, 0, null, -1]) }),
      () => b64({ ...payload, payload: rand.pick([null, "x", [], {}]) }),
      () => {
        const a = { ...payload.payload.authorization };
        const key = rand.pick(["from", "to", "value", "validAfter", "validBefore", "nonce"]);
        a[key] = rand.pick([null, "", "-1", "0x", 1.5, "1e99", "9".repeat(90), {}, []]);
        return b64({ ...payload, payload: { ...payload.payload, authorization: a } });
      },
      () =>
        b64({
          ...payload,
          payload: {
            ...payload.payload,
            signature: `0x${Buffer.from(rand.bytes(rand.pick([0, 1, 64, 65, 66]))).toString("hex")}`,
          },
        }),
      () =>
        b64({
          ...payload,
          accepted: { ...((payload as Record<string, unknown>).accepted as object), network: "eip155:1" },
        }),
      () => b64("[".repeat(5000)),
      () => "A".repeat(9000),
      () =>
        b64({
          x402Version: 1,
          scheme: "exact",
          network: "base-sepolia",
          // v1 wrapping with junk beside it, and a signature one byte off (recovers to someone else)
          payload: { ...payload.payload, signature: `${payload.payload.signature.slice(0, -4)}1b00` },
          extra: "é\u0000",
        }),
    ];
    const paymentsBefore = databaseDigest(stack.db);
    let headerWrong = 0;
    let headerPlain = 0;
    const cidUrl = `${stack.url}/x402/cid/${stack.cids["a.txt"]}`;
    for (let i = 0; i < N; i++) {
      const value = rand.pick(headerDefects)();
      const name = rand.pick(["PAYMENT-SIGNATURE", "X-PAYMENT"]);
      let res: Response;
      try {
        res = await fetch(cidUrl, { headers: { [name]: value } });
      } catch {
        headerWrong++; // the connection was dropped: no answer at all is wrong too
        continue;
      }
      if (await isPlainServerError(res)) headerPlain++;
      if (res.status >= 500 || res.status === 200) headerWrong++;
      await res.arrayBuffer();
    }
    // A signature longer than 65 bytes (a smart wallet's) only the chain can check: such a proof reaches the
    // facilitator and leaves a row refused at verify, which the pruner removes once its retention passes.
    const pruned = pruneRefusedRows({
      payments: stack.stores.payments,
      now: () => Date.now() + REFUSED_ROW_RETENTION_MS + 1000,
    });
    const headersChanged = changedTables(paymentsBefore, databaseDigest(stack.db));

    const rows: ChaosRow[] = [
      {
        case: "malformed management requests",
        tried: N,
        wrong: managementWrong + managementChanged.length,
        note: `${managementPlain} plain-text 5xx; database ${managementChanged.length ? `CHANGED: ${managementChanged}` : "unchanged"}`,
      },
      {
        case: "malformed payment headers",
        tried: N,
        wrong: headerWrong + headersChanged.length,
        note: `${headerPlain} plain-text 5xx; database ${headersChanged.length ? `CHANGED: ${headersChanged}` : "unchanged"} (${pruned} rows refused at verify, pruned)`,
      },
    ];
    return rows;
  } finally {
    await stack.stop();
  }
};

export default malformed;
