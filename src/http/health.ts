/**
 * Probes for a supervisor or load balancer, no token needed:
 *
 * - `GET /healthz`: the process answers (liveness). Nothing else is
 *   checked, so a slow facilitator never gets a healthy server restarted.
 * - `GET /readyz`: ready to sell (readiness): the database answers a query,
 *   pricing has loaded (when this server loads pricing files), and the
 *   facilitator answers (`/supported` over HTTP; the chain id from the RPC
 *   for the built-in one). 200 or 503, each check named in the body, never
 *   an address, a path or a secret.
 *
 * A facilitator answer is reused for a few seconds so that a probe every
 * second costs the facilitator one call per window, not one per probe.
 */
import { type DocumentDecoration, Elysia } from "elysia";
import type { Facilitator } from "../facilitator/types";
import type { Pricing } from "../pricing/service";
import type { Stores } from "../stores";

export interface HealthDeps {
  database: Pick<Stores, "ping">;
  facilitator: Facilitator;
  /** Absent: this server does not load pricing files (the check is skipped). */
  pricing?: Pricing;
  /** Bound on the facilitator check, ms. */
  timeoutMs: number;
  /** How long a facilitator answer is reused, ms (default 5000). */
  cacheMs?: number;
}

type Check = { ok: boolean; detail?: string };

/** OpenAPI detail; cast as in auth.ts (elysia types `detail` from the optional `openapi-types`). */
const doc = (detail: Record<string, unknown>) => detail as unknown as DocumentDecoration;

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function healthModule(deps: HealthDeps) {
  const cacheMs = deps.cacheMs ?? 5000;
  let facilitatorCheck: { at: number; result: Promise<Check> } | undefined;

  async function checkDatabase(): Promise<Check> {
    try {
      await withTimeout(Promise.resolve(deps.database.ping()), deps.timeoutMs);
      return { ok: true };
    } catch {
      return { ok: false, detail: "the database does not answer" };
    }
  }

  function checkPricing(): Check {
    if (!deps.pricing) return { ok: true, detail: "pricing files not loaded by this server" };
    return deps.pricing.status().lastGood
      ? { ok: true }
      : { ok: false, detail: "no pricing loaded yet (see GET /v3/x402/config)" };
  }

  async function askFacilitator(): Promise<Check> {
    // The built-in facilitator's /supported is a constant: its chain is what can be down.
    const local = deps.facilitator as Facilitator & { ping?: () => Promise<unknown> };
    try {
      if (typeof local.ping === "function") await withTimeout(local.ping(), deps.timeoutMs);
      else await withTimeout(deps.facilitator.supported(), deps.timeoutMs);
      return { ok: true };
    } catch {
      return { ok: false, detail: "the facilitator (or its chain) does not answer" };
    }
  }

  function checkFacilitator(): Promise<Check> {
    const now = Date.now();
    if (!facilitatorCheck || now - facilitatorCheck.at > cacheMs) {
      facilitatorCheck = { at: now, result: askFacilitator() };
    }
    return facilitatorCheck.result;
  }

  return new Elysia({ name: "health" })
    .get("/healthz", () => ({ status: "ok" }), {
      detail: doc({ tags: ["health"], summary: "Liveness: the process answers", security: [] }),
    })
    .get(
      "/readyz",
      async ({ set }) => {
        const checks = {
          database: await checkDatabase(),
          pricing: checkPricing(),
          facilitator: await checkFacilitator(),
        };
        const ready = Object.values(checks).every((c) => c.ok);
        set.status = ready ? 200 : 503;
        return { status: ready ? "ready" : "not ready", checks };
      },
      {
        detail: doc({
          tags: ["health"],
          summary: "Readiness: database open, pricing loaded, facilitator answering (503 otherwise)",
          // 200 or 503 in the description, not as responses: Redocly's recommended rules would want a 4XX
          // this route never answers.
          description: "200 when ready to sell; 503 when not, `checks` naming what failed.",
          security: [],
        }),
      },
    );
}
