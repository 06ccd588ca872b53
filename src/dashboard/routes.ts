/**
 * The dashboard: GET /dashboard (one HTML page), its assets (our script and
 * styles, and uPlot from node_modules: nothing from a third party), and the
 * two reads it needs beyond the management API: /v3/x402/dashboard/overview
 * and /v3/x402/dashboard/health (read scope).
 *
 * The page signs in with a management token kept in sessionStorage and sent
 * as `Authorization: Bearer` by the page's own script: the browser never
 * attaches it by itself, so no other site can make a signed-in request
 * (no CSRF), and closing the tab or "Log out" forgets it. A strict CSP
 * allows only this origin's script, styles and connections.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Elysia } from "elysia";
import type { Facilitator } from "../facilitator/types";
import { type AuthDeps, auth } from "../http/auth";
import { createHealth } from "./health";
import { createOverview, type OverviewDeps } from "./overview";

export const DASHBOARD_PATH = "/dashboard";

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY = {
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

interface Asset {
  body: string;
  type: string;
  etag: string;
}

/** Read once at start: the page and its assets are a few files, served from memory. */
function loadAssets() {
  const here = join(import.meta.dir, "assets");
  const files: Record<string, string> = {
    "app.js": join(here, "app.js"),
    "app.css": join(here, "app.css"),
    "uplot.js": Bun.resolveSync("uplot/dist/uPlot.iife.min.js", import.meta.dir),
    "uplot.css": Bun.resolveSync("uplot/dist/uPlot.min.css", import.meta.dir),
  };
  const assets = new Map<string, Asset>();
  for (const [name, path] of Object.entries(files)) {
    const body = readFileSync(path, "utf8");
    const etag = createHash("sha256").update(body).digest("base64url").slice(0, 16);
    assets.set(name, { body, type: TYPES[name.split(".").pop()!], etag });
  }
  // Each asset's URL carries its hash, so it can be cached for good and a new build is fetched at once.
  const page = readFileSync(join(here, "index.html"), "utf8").replace(
    /\{\{asset:([a-z.]+)\}\}/g,
    (_, name: string) => `${DASHBOARD_PATH}/assets/${name}?v=${assets.get(name)!.etag}`,
  );
  return { assets, page };
}

export interface DashboardDeps extends AuthDeps, OverviewDeps {
  facilitator: Facilitator;
  settings: OverviewDeps["settings"] & Parameters<typeof createHealth>[0]["settings"];
}

export function dashboardModule(deps: DashboardDeps) {
  const { assets, page } = loadAssets();
  const overview = createOverview(deps);
  const health = createHealth(deps);
  const html = () =>
    new Response(page, {
      headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...SECURITY },
    });

  return new Elysia({ name: "dashboard" })
    .use(auth(deps))
    .get(DASHBOARD_PATH, html, { detail: { hide: true } })
    .get(`${DASHBOARD_PATH}/`, html, { detail: { hide: true } })
    .get(
      `${DASHBOARD_PATH}/assets/:name`,
      ({ params, request }) => {
        const a = assets.get(params.name);
        if (!a)
          return new Response(JSON.stringify({ error: { code: "not_found", message: "no such asset" } }), {
            status: 404,
            headers: { "content-type": "application/json" },
          });
        const headers = {
          "content-type": a.type,
          etag: `"${a.etag}"`,
          "cache-control": "public, max-age=31536000, immutable",
          "x-content-type-options": "nosniff",
        };
        if (request.headers.get("if-none-match") === `"${a.etag}"`) return new Response(null, { status: 304, headers });
        return new Response(a.body, { headers });
      },
      { detail: { hide: true } },
    )
    .get("/v3/x402/dashboard/overview", async () => ({ data: await overview.read() }), {
      scope: "read",
      detail: {
        tags: ["dashboard"],
        summary:
          "Recent payments (file, dollars, explorer link) and what needs attention: unconfirmed settlements, money moved without a sale, pricing errors, webhook deliveries",
        responses: { 200: { description: "`{data: {...}}`: what the dashboard draws (not a stable API)" } },
      },
    })
    .get("/v3/x402/dashboard/health", async () => ({ data: await health.read() }), {
      scope: "read",
      detail: {
        tags: ["dashboard"],
        summary: "Facilitator and RPC health (cached 15 s, each bounded by 3 s)",
        responses: { 200: { description: "`{data: {...}}`: what the dashboard draws (not a stable API)" } },
      },
    });
}
