/**
 * What revocation adds to a management request: auth reads the revocation
 * table (tokens/store.ts, `isRevoked`) on every request, after the HS256
 * verify it already did. Both measured in one run, on a SQLite file (WAL)
 * holding 1,000 recorded tokens, so the figure is a ratio to a baseline
 * taken on the same (possibly loaded) machine at the same time.
 *
 *   npx bun bench/tokens.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../src/db/client";
import { checkToken, createToken, tokenPlugin } from "../src/http/token";
import { createTokenStore } from "../src/tokens/store";

const ROUNDS = 5;
const LOOKUPS = 100_000;
const VERIFIES = 10_000;

const dir = mkdtempSync(join(tmpdir(), "cidgate-bench-tokens-"));
try {
  const db = openDb(join(dir, "cidgate.db"));
  const store = createTokenStore(db);
  const now = new Date().toISOString();
  for (let i = 0; i < 1000; i++) {
    store.record({ id: crypto.randomUUID(), scopes: ["read"], label: null, createdAt: now, expiresAt: now });
  }
  const id = crypto.randomUUID();
  const secret = "bench-secret-bench-secret-bench-secret-1";
  const token = await createToken(secret, { scopes: ["read"], ttlSeconds: 600, id });
  store.record({ id, scopes: ["read"], label: null, createdAt: now, expiresAt: now });
  const jwt = tokenPlugin(secret).decorator.jwt;

  console.log("| round | isRevoked (µs/call) | HS256 verify (µs/call) | lookup / verify |");
  console.log("|---|---|---|---|");
  for (let round = 1; round <= ROUNDS; round++) {
    let t = performance.now();
    for (let i = 0; i < LOOKUPS; i++) store.isRevoked(id);
    const lookup = ((performance.now() - t) * 1000) / LOOKUPS;
    t = performance.now();
    for (let i = 0; i < VERIFIES; i++) await checkToken(jwt, token);
    const verify = ((performance.now() - t) * 1000) / VERIFIES;
    console.log(`| ${round} | ${lookup.toFixed(2)} | ${verify.toFixed(2)} | ${(lookup / verify).toFixed(2)} |`);
  }
  db.sqlite.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
