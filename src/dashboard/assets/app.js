// cidgate dashboard: plain script, no build step, nothing from a third party (uPlot is served by cidgate).
// Every value from the server reaches the page through textContent, never innerHTML.

(() => {
  const TOKEN_KEY = "cidgate.dashboard.token";
  const THEME_KEY = "cidgate.dashboard.theme";
  const $ = (id) => document.getElementById(id);
  const state = {
    bucket: "day",
    network: "",
    by: "cid",
    sort: { key: "revenue", dir: -1 },
    charts: { revenue: [], sales: [] },
    data: {},
  };

  /** h("td", {class: "num"}, "text", childNode...) */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  /** At 375 px a table row reads as a small card: each cell carries its column's name (CSS shows it). */
  function labelCells(table) {
    const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent.replace(/[▲▼]/g, "").trim());
    for (const row of table.querySelectorAll("tbody tr, tfoot tr"))
      [...row.children].forEach((td, i) => {
        if (names[i] && !td.hasAttribute("colspan")) td.dataset.label = names[i];
      });
  }
  for (const table of document.querySelectorAll("table"))
    new MutationObserver(() => labelCells(table)).observe(table, { childList: true });

  // ---- money: exact, in millionths of a dollar (USDC has 6 decimals) ----
  const micro = (usd) => {
    const [whole, frac = ""] = String(usd).split(".");
    return BigInt(whole || "0") * 1000000n + BigInt(`${frac}000000`.slice(0, 6));
  };
  const dollars = (m) => {
    const neg = m < 0n;
    const a = neg ? -m : m;
    const whole = (a / 1000000n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    let frac = (a % 1000000n).toString().padStart(6, "0").replace(/0+$/, "");
    if (frac.length < 2) frac = frac.padEnd(2, "0");
    return `${neg ? "-" : ""}$${whole}.${frac}`;
  };
  const usdText = (usd) => (usd === null || usd === undefined ? "—" : dollars(micro(usd)));
  const revenueOf = (revenue) =>
    (revenue || []).filter((r) => !state.network || r.network === state.network).reduce((s, r) => s + micro(r.usd), 0n);
  const salesOf = (fig) =>
    state.network
      ? (fig.revenue || []).filter((r) => r.network === state.network).reduce((s, r) => s + r.sales, 0)
      : fig.sales;
  const pct = (c) => (c === null || c === undefined ? "—" : `${(c * 100).toFixed(c < 0.1 && c > 0 ? 1 : 0)}%`);
  const short = (s, a = 6, b = 4) => (s && s.length > a + b + 1 ? `${s.slice(0, a)}…${s.slice(-b)}` : s || "");
  const when = (iso) => {
    const d = new Date(iso);
    return `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)}`;
  };
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

  // ---- the token: sessionStorage, sent as a bearer header by this script only (no cookie: no CSRF) ----
  const token = () => sessionStorage.getItem(TOKEN_KEY);
  const scopes = () => {
    try {
      const claims = JSON.parse(atob(token().split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
      return String(claims.scope || "").split(" ");
    } catch {
      return [];
    }
  };
  const canWrite = () => scopes().includes("write");

  class HttpError extends Error {
    constructor(status, body) {
      super(body?.error?.message || `HTTP ${status}`);
      this.status = status;
    }
  }
  async function api(path, init = {}) {
    const res = await fetch(path, {
      ...init,
      headers: { authorization: `Bearer ${token()}`, accept: "application/json", ...(init.headers || {}) },
      cache: "no-store",
    });
    const body = await res.json().catch(() => undefined);
    if (res.status === 401) {
      logout("Your session expired or the token is no longer valid: log in again.");
      throw new HttpError(401, body);
    }
    if (!res.ok) throw new HttpError(res.status, body);
    return body.data;
  }

  // ---- theme ----
  function applyTheme(theme) {
    if (theme) document.documentElement.dataset.theme = theme;
    const dark =
      (document.documentElement.dataset.theme ||
        (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light")) === "dark";
    $("theme").textContent = dark ? "Light theme" : "Dark theme";
    $("theme").setAttribute("aria-label", dark ? "Switch to the light theme" : "Switch to the dark theme");
  }
  $("theme").addEventListener("click", () => {
    const dark = getComputedStyle(document.documentElement).colorScheme === "dark";
    const next = dark ? "light" : "dark";
    localStorage.setItem(THEME_KEY, next);
    applyTheme(next);
    if (state.data.stats) renderStats(); // charts take their colours from the theme
  });
  applyTheme(localStorage.getItem(THEME_KEY));

  // ---- login / logout ----
  function showLogin(message) {
    $("app").hidden = true;
    $("logout").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("token").focus();
  }
  function logout(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    clearCharts("revenue");
    clearCharts("sales");
    state.data = {};
    showLogin(message);
  }
  $("logout").addEventListener("click", () => logout("Logged out."));
  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const value = $("token").value.trim();
    if (!value) return;
    $("login-error").textContent = "";
    const res = await fetch("/v3/x402/dashboard/overview", {
      headers: { authorization: `Bearer ${value}` },
      cache: "no-store",
    });
    if (res.status === 401)
      return void ($("login-error").textContent = "This token is not valid (wrong server, expired or mistyped).");
    if (res.status === 403) return void ($("login-error").textContent = "This token lacks the read scope.");
    if (!res.ok) return void ($("login-error").textContent = `The server answered ${res.status}.`);
    sessionStorage.setItem(TOKEN_KEY, value);
    $("token").value = "";
    start();
  });

  function start() {
    $("login").hidden = true;
    $("app").hidden = false;
    $("logout").hidden = false;
    void load();
  }

  // ---- controls ----
  for (const b of document.querySelectorAll("[data-bucket]"))
    b.addEventListener("click", () => {
      state.bucket = b.dataset.bucket;
      for (const o of document.querySelectorAll("[data-bucket]")) o.setAttribute("aria-pressed", String(o === b));
      void loadStats();
    });
  for (const b of document.querySelectorAll("[data-by]"))
    b.addEventListener("click", () => {
      state.by = b.dataset.by;
      for (const o of document.querySelectorAll("[data-by]")) o.setAttribute("aria-pressed", String(o === b));
      void loadStats();
    });
  // Arrow keys move within a group of toggles too (Tab reaches each one as well).
  for (const group of document.querySelectorAll("fieldset.seg"))
    group.addEventListener("keydown", (e) => {
      if (!["ArrowLeft", "ArrowRight"].includes(e.key)) return;
      const items = [...group.querySelectorAll("button")];
      const i = items.indexOf(document.activeElement);
      const next = items[(i + (e.key === "ArrowRight" ? 1 : items.length - 1)) % items.length];
      next.focus();
      next.click();
    });
  $("network").addEventListener("change", () => {
    state.network = $("network").value;
    renderStats();
  });
  $("refresh").addEventListener("click", () => load());

  // ---- loading ----
  const status = (text) => ($("status").textContent = text);
  async function load() {
    status("Loading…");
    await Promise.all([loadStats(), loadOverview(), loadEntitlements(), loadDeliveries()]);
    void loadHealth();
    status(`Updated ${new Date().toLocaleTimeString()}`);
  }

  /** The three statistics reads in parallel, each view drawn as soon as its own answer is in. */
  function loadStats() {
    const q = `bucket=${state.bucket}`;
    const mine = {};
    state.data.stats = mine;
    state.data.statsError = undefined;
    renderStats();
    const part = (name, path) =>
      api(path).then(
        (value) => {
          if (state.data.stats !== mine) return; // a newer load replaced this one
          mine[name] = value;
          renderStats(name);
        },
        (e) => {
          if (state.data.stats !== mine || state.data.statsError) return;
          state.data.statsError =
            e.status === 404
              ? "Statistics are not available: this server does not offer GET /v3/x402/stats (it answered 404)."
              : `Statistics could not be loaded: ${e.message}`;
          renderStats();
        },
      );
    return Promise.all([
      part("stats", `/v3/x402/stats?${q}`),
      part("rows", `/v3/x402/stats/breakdown?${q}&by=${state.by}&sort=revenue&limit=50`),
      part("funnel", `/v3/x402/stats/breakdown?${q}&by=cid&sort=offers&limit=20`),
    ]);
  }

  function clearCharts(section) {
    for (const c of state.charts[section]) c.destroy();
    state.charts[section] = [];
  }

  async function loadOverview() {
    try {
      state.data.overview = await api("/v3/x402/dashboard/overview");
      renderOverview();
      // The entitlements table names files and instructions from the overview, whichever came first.
      if (state.data.entitlements) renderEntitlements(state.data.entitlements);
    } catch (e) {
      if (e.status !== 401)
        $("attention-list").replaceChildren(h("li", { class: "error" }, `Could not load: ${e.message}`));
    }
  }

  // ---- statistics: summary, revenue chart, sales table, funnel ----
  function statsUnavailable(message) {
    $("summary").replaceChildren(
      h("div", { class: "stat" }, h("div", { class: "label" }, "Statistics"), h("div", {}, message)),
    );
    $("revenue-total").textContent = "";
    $("revenue-chart").replaceChildren(h("p", { class: "empty" }, message));
    $("revenue-chart").dataset.total = "";
    $("revenue-note").textContent = "";
    for (const id of ["sales-table", "funnel-table"]) $(id).replaceChildren(h("caption", { class: "empty" }, message));
  }

  /** Draws one part of the statistics (`stats`, `rows`, `funnel`), or all of them. */
  function renderStats(only) {
    if (state.data.statsError || !state.data.stats) {
      clearCharts("revenue");
      clearCharts("sales");
      return statsUnavailable(state.data.statsError || "Loading…");
    }
    const { stats, rows, funnel } = state.data.stats;
    const loading = (id) => $(id).replaceChildren(h("caption", { class: "empty" }, "Loading…"));
    if (!only || only === "rows") {
      clearCharts("sales");
      if (rows) renderSales(rows);
      else loading("sales-table");
    }
    if (!only || only === "funnel") {
      if (funnel) renderFunnel(funnel);
      else loading("funnel-table");
    }
    if (only && only !== "stats") return;
    clearCharts("revenue");
    if (!stats) {
      $("revenue-chart").replaceChildren(h("p", { class: "empty" }, "Loading…"));
      return;
    }
    const total = revenueOf(stats.totals.revenue);
    const range = `${stats.from.slice(0, 10)} to ${new Date(Date.parse(stats.to) - 1).toISOString().slice(0, 10)}`;
    $("summary").replaceChildren(
      stat("Revenue", dollars(total), "summary-revenue"),
      stat("Sales", salesOf(stats.totals)),
      stat("402 offers", stats.totals.offers),
      stat("Conversion", pct(stats.totals.conversion)),
    );
    $("revenue-total").textContent = `${dollars(total)}`;
    $("revenue-note").textContent =
      `${range}, per ${stats.bucket} (UTC)${state.network ? `, ${state.network} only` : ", every network"}.`;
    drawRevenue(stats);
  }

  function stat(label, value, id) {
    return h(
      "div",
      { class: "stat" },
      h("div", { class: "label" }, label),
      h("div", { class: "value", id }, String(value)),
    );
  }

  function drawRevenue(stats) {
    const el = $("revenue-chart");
    el.replaceChildren();
    const networks = [...new Set(stats.buckets.flatMap((b) => b.revenue.map((r) => r.network)))]
      .filter((n) => !state.network || n === state.network)
      .sort();
    if (networks.length === 0) networks.push(state.network || "revenue");
    const xs = stats.buckets.map((b) => Date.parse(b.start) / 1000);
    const half = xs.length > 1 ? (xs[1] - xs[0]) / 2 : 43200;
    const perNetwork = networks.map((n) =>
      stats.buckets.map((b) => b.revenue.filter((r) => r.network === n).reduce((s, r) => s + micro(r.usd), 0n)),
    );
    // The exact sum of what is plotted, for readers and tests: the chart's own data, in dollars.
    el.dataset.total = dollars(perNetwork.flat().reduce((s, v) => s + v, 0n));
    el.setAttribute("aria-label", `Revenue per ${stats.bucket}: ${el.dataset.total} in all`);
    const colours = [css("--series-1"), css("--series-2")];
    const fg = css("--muted");
    const grid = css("--line");
    const bars = uPlot.paths.bars({ size: [networks.length > 1 ? 0.4 : 0.7, 48], align: 0 });
    const opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: el.clientWidth < 500 ? 200 : 260,
      // Half a bucket of room either side, so the first and last bars are drawn whole.
      scales: {
        x: { time: true, range: (_u, min, max) => [min - half, max + half] },
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.15 : 1] },
      },
      axes: [
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
        {
          stroke: fg,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid },
          size: 64,
          values: (_u, vals) => vals.map((v) => `$${v < 1 ? v.toFixed(2) : v.toLocaleString()}`),
        },
      ],
      series: [
        {
          label: stats.bucket === "month" ? "Month" : stats.bucket === "week" ? "Week of" : "Day",
          value: (_u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)),
        },
        ...networks.map((n, i) => ({
          label: n,
          stroke: colours[i % 2],
          fill: `${colours[i % 2]}cc`,
          width: 1,
          paths: bars,
          points: { show: false },
          value: (_u, v) => (v == null ? "—" : `$${v.toFixed(v < 0.01 && v > 0 ? 6 : 2)}`),
        })),
      ],
    };
    if (networks.length > 1) {
      opts.series[1].paths = uPlot.paths.bars({ size: [0.4, 48], align: -1 });
      opts.series[2].paths = uPlot.paths.bars({ size: [0.4, 48], align: 1 });
    }
    // An empty bucket is drawn as no bar (null), not as a bar of height 0.
    const data = [xs, ...perNetwork.map((s) => s.map((v) => (v === 0n ? null : Number(v) / 1e6)))];
    state.charts.revenue.push(new uPlot(opts, data, el));
  }

  function spark(series) {
    const el = h("div", { class: "spark", role: "img", "aria-label": `sales per period: ${series.join(", ")}` });
    queueMicrotask(() => {
      const xs = series.map((_, i) => i);
      const chart = new uPlot(
        {
          width: 120,
          height: 28,
          pxAlign: false,
          cursor: { show: false },
          legend: { show: false },
          select: { show: false },
          scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
          axes: [{ show: false }, { show: false }],
          series: [{}, { stroke: css("--spark"), fill: `${css("--spark")}33`, width: 1.5, points: { show: false } }],
        },
        [xs, series],
        el,
      );
      state.charts.sales.push(chart);
    });
    return el;
  }

  function label(row) {
    if (row.path) return row.path;
    if (row.name) return row.name;
    return short(row.key, 10, 6);
  }

  const SALES_COLUMNS = [
    { key: "name", label: () => (state.by === "cid" ? "File" : "Instruction"), get: (r) => label(r).toLowerCase() },
    { key: "sales", label: () => "Sales", num: true, get: (r) => salesOf(r) },
    { key: "revenue", label: () => "Revenue", num: true, get: (r) => revenueOf(r.revenue) },
    { key: "offers", label: () => "Offers", num: true, get: (r) => r.offers },
    { key: "conversion", label: () => "Conversion", num: true, get: (r) => r.conversion ?? -1 },
  ];

  function renderSales(data) {
    const rows = [...data.rows];
    const col = SALES_COLUMNS.find((c) => c.key === state.sort.key) || SALES_COLUMNS[2];
    rows.sort((a, b) => {
      const x = col.get(a);
      const y = col.get(b);
      return (x < y ? -1 : x > y ? 1 : 0) * state.sort.dir;
    });
    const head = h(
      "tr",
      {},
      SALES_COLUMNS.map((c) =>
        h(
          "th",
          {
            class: c.num ? "num" : "",
            scope: "col",
            "aria-sort": c.key === state.sort.key ? (state.sort.dir < 0 ? "descending" : "ascending") : "none",
          },
          h(
            "button",
            {
              type: "button",
              class: "sort",
              onclick: () => {
                state.sort = { key: c.key, dir: state.sort.key === c.key ? -state.sort.dir : c.num ? -1 : 1 };
                clearCharts("sales");
                renderSales(data);
                $("sales-table").querySelector(`th[aria-sort]:not([aria-sort="none"]) button`)?.focus();
              },
            },
            c.label(),
          ),
        ),
      ),
      h("th", { scope: "col" }, `Sales per ${data.bucket}`),
    );
    const body = rows.length
      ? rows.map((r) =>
          h(
            "tr",
            {},
            h("td", { class: "file", title: r.key }, label(r)),
            h("td", { class: "num" }, salesOf(r)),
            h("td", { class: "num" }, dollars(revenueOf(r.revenue))),
            h("td", { class: "num" }, r.offers),
            h("td", { class: "num" }, pct(r.conversion)),
            h("td", {}, spark(r.series)),
          ),
        )
      : [h("tr", {}, h("td", { colspan: 6, class: "empty" }, "No sales or offers in this period yet."))];
    const sum = rows.reduce((s, r) => s + revenueOf(r.revenue), 0n);
    const foot = h(
      "tr",
      {},
      h("td", {}, "Total"),
      h(
        "td",
        { class: "num" },
        rows.reduce((s, r) => s + salesOf(r), 0),
      ),
      h("td", { class: "num", id: "sales-total" }, dollars(sum)),
      h(
        "td",
        { class: "num" },
        rows.reduce((s, r) => s + r.offers, 0),
      ),
      h("td", {}),
      h("td", {}),
    );
    $("sales-note").replaceChildren(
      state.by === "cid" ? "Per file" : "Per instruction",
      h("span", { class: "wide" }, "; select a heading to sort"),
      ".",
    );
    $("sales-table").replaceChildren(h("thead", {}, head), h("tbody", {}, body), h("tfoot", {}, foot));
  }

  function renderFunnel(data) {
    const rows = data.rows;
    const max = Math.max(1, ...rows.map((r) => r.offers));
    const body = rows.length
      ? rows.map((r) =>
          h(
            "tr",
            {},
            h("td", { class: "file", title: r.key }, label(r)),
            h("td", { class: "num" }, r.offers),
            h("td", { class: "num" }, r.proofs),
            h("td", { class: "num" }, r.sales),
            h("td", { class: "num" }, pct(r.conversion)),
            h(
              "td",
              { "aria-hidden": "true" },
              h("div", { class: "bar", title: `${r.offers} offers` }, barFill(r.offers / max)),
            ),
          ),
        )
      : [h("tr", {}, h("td", { colspan: 6, class: "empty" }, "Nobody was offered a file in this period yet."))];
    $("funnel-table").replaceChildren(
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "File"),
          h("th", { scope: "col", class: "num" }, "402 offers"),
          h("th", { scope: "col", class: "num" }, "Proofs"),
          h("th", { scope: "col", class: "num" }, "Sales"),
          h("th", { scope: "col", class: "num" }, "Conversion"),
          h("th", { scope: "col" }, "Offers"),
        ),
      ),
      h("tbody", {}, body),
    );
  }

  function barFill(fraction) {
    const span = h("span");
    span.style.width = `${Math.round(fraction * 100)}%`;
    return span;
  }

  // ---- overview: recent payments and needs attention ----
  const STATUS_TEXT = {
    settled: "settled",
    settling: "settling",
    unconfirmed: "unconfirmed",
    money_moved: "money moved, no sale",
    failed: "failed",
  };
  const fileOf = (p) => p.path || short(p.cid, 10, 6);

  function renderOverview() {
    const o = state.data.overview;
    const payments = o.recent_payments;
    $("payments-table").replaceChildren(
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["When (UTC)", "Payer", "File", "Amount", "State", "Transaction"].map((t, i) =>
            h("th", { scope: "col", class: i === 3 ? "num" : "" }, t),
          ),
        ),
      ),
      h(
        "tbody",
        {},
        payments.length
          ? payments.map((p) =>
              h(
                "tr",
                {},
                h("td", {}, when(p.created_at)),
                h("td", { class: "mono", title: p.payer }, short(p.payer)),
                h("td", { class: "file", title: p.cid }, fileOf(p)),
                h("td", { class: "num" }, p.usd === null ? `${p.amount} units` : usdText(p.usd)),
                h(
                  "td",
                  {},
                  h(
                    "span",
                    { class: `badge ${p.status}`, title: p.detail || undefined },
                    STATUS_TEXT[p.status] || p.status,
                  ),
                ),
                h(
                  "td",
                  { class: "mono" },
                  p.explorer_url
                    ? h(
                        "a",
                        {
                          href: p.explorer_url,
                          target: "_blank",
                          rel: "noopener noreferrer",
                          title: `${p.transaction} on ${p.network}`,
                        },
                        short(p.transaction, 8, 6),
                      )
                    : "—",
                ),
              ),
            )
          : [h("tr", {}, h("td", { colspan: 6, class: "empty" }, "No payments yet."))],
      ),
    );

    const items = [];
    const a = o.attention;
    for (const p of a.money_moved_without_sale)
      items.push(
        attention(
          "money_moved",
          "Money moved without a sale",
          `${usdText(p.usd)} from ${short(p.payer)} for ${fileOf(p)}: on chain, not recorded`,
          p.transaction,
        ),
      );
    for (const p of a.pending)
      items.push(
        attention(
          p.status,
          p.status === "unconfirmed" ? "Settlement unconfirmed" : "Settlement pending",
          `${usdText(p.usd)} from ${short(p.payer)} for ${fileOf(p)}, since ${when(p.updated_at)}${p.detail ? ` (${p.detail})` : ""}`,
        ),
      );
    if (a.pricing)
      for (const e of a.pricing.errors)
        items.push(attention("failed", "Pricing reload rejected", e.message, `${e.file}:${e.line}:${e.column}`));
    if (a.webhooks.failed)
      items.push(
        attention("failed", "Webhook deliveries failed", `${a.webhooks.failed} failed for good; retry them below`),
      );
    if (a.webhooks.pending)
      items.push(attention("pending", "Webhook deliveries waiting", `${a.webhooks.pending} queued or retrying`));
    $("attention-list").replaceChildren(
      ...(items.length ? items : [h("li", { class: "none" }, "✓ Nothing needs attention.")]),
    );
  }

  function attention(kind, title, text, where) {
    return h(
      "li",
      { "data-kind": kind },
      h("span", { class: `badge ${kind}` }, title),
      h("span", {}, text),
      where ? h("span", { class: "where" }, where) : null,
    );
  }

  async function loadHealth() {
    try {
      const health = await api("/v3/x402/dashboard/health");
      const line = (name, c) =>
        h(
          "li",
          { "data-health": name },
          h(
            "span",
            { class: `badge ${c.state}` },
            c.state === "ok" ? "ok" : c.state === "down" ? "down" : "not configured",
          ),
          h("strong", {}, name),
          h("span", { class: "muted" }, `${c.detail}${c.ms !== undefined ? ` (${c.ms} ms)` : ""}`),
        );
      $("health-list").replaceChildren(line("Facilitator", health.facilitator), line("RPC", health.rpc));
    } catch (e) {
      if (e.status !== 401)
        $("health-list").replaceChildren(h("li", { class: "error" }, `Could not check: ${e.message}`));
    }
  }

  // ---- entitlements with revoke ----
  async function loadEntitlements() {
    try {
      const data = await api("/v3/x402/entitlements?active=true&limit=50");
      state.data.entitlements = data.entitlements;
      renderEntitlements(data.entitlements);
    } catch (e) {
      if (e.status !== 401)
        $("entitlements-table").replaceChildren(h("caption", { class: "error" }, `Could not load: ${e.message}`));
    }
  }

  function renderEntitlements(list) {
    const write = canWrite();
    $("entitlements-note").textContent = write
      ? "Active entitlements, newest first. Revoking asks once more before it acts."
      : "Active entitlements, newest first. Revoking needs a token with the write scope.";
    const paths = state.data.overview?.paths || {};
    const names = state.data.overview?.instruction_names || {};
    $("entitlements-table").replaceChildren(
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Payer", "Covers", "Source", "Granted", "Expires", ""].map((t) => h("th", { scope: "col" }, t)),
        ),
      ),
      h(
        "tbody",
        {},
        list.length
          ? list.map((e) =>
              h(
                "tr",
                { "data-entitlement": e.id },
                h("td", { class: "mono", title: e.payer }, short(e.payer)),
                h(
                  "td",
                  { class: "file", title: e.cid || e.payment_instruction_id },
                  e.scope === "cid"
                    ? paths[e.cid] || short(e.cid, 10, 6)
                    : `every file of ${names[e.payment_instruction_id] || short(e.payment_instruction_id, 8, 4)}`,
                ),
                h("td", {}, e.source === "payment" ? `payment ${e.payment_id}` : "grant"),
                h("td", {}, when(e.granted_at)),
                h("td", {}, e.expires_at ? when(e.expires_at) : "never"),
                h("td", {}, revokeButton(e, write)),
              ),
            )
          : [h("tr", {}, h("td", { colspan: 6, class: "empty" }, "No active entitlements."))],
      ),
    );
  }

  function revokeButton(e, write) {
    let armed = false;
    let timer;
    const b = h(
      "button",
      { type: "button", class: "danger", disabled: !write, "aria-label": `Revoke entitlement ${e.id} of ${e.payer}` },
      "Revoke",
    );
    b.addEventListener("click", async () => {
      if (!armed) {
        armed = true;
        b.classList.add("armed");
        b.textContent = "Confirm revoke";
        timer = setTimeout(() => {
          armed = false;
          b.classList.remove("armed");
          b.textContent = "Revoke";
        }, 6000);
        return;
      }
      clearTimeout(timer);
      b.disabled = true;
      try {
        await api(`/v3/x402/entitlements/${e.id}`, { method: "DELETE" });
        status(`Revoked entitlement ${e.id}.`);
        await loadEntitlements();
      } catch (err) {
        status(`Not revoked: ${err.message}`);
        b.disabled = false;
      }
    });
    return b;
  }

  // ---- webhook delivery log ----
  async function loadDeliveries() {
    try {
      const data = await api("/v3/x402/webhooks/deliveries?limit=20");
      renderDeliveries(data.deliveries);
    } catch (e) {
      if (e.status !== 401)
        $("deliveries-table").replaceChildren(h("caption", { class: "error" }, `Could not load: ${e.message}`));
    }
  }

  function renderDeliveries(list) {
    const write = canWrite();
    $("deliveries-table").replaceChildren(
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["When (UTC)", "Event", "State", "Attempts", "Last answer", ""].map((t) => h("th", { scope: "col" }, t)),
        ),
      ),
      h(
        "tbody",
        {},
        list.length
          ? list.map((d) =>
              h(
                "tr",
                {},
                h("td", {}, when(d.created_at)),
                h("td", { class: "mono" }, d.event_type),
                h("td", {}, h("span", { class: `badge ${d.state}` }, d.state)),
                h("td", { class: "num" }, d.attempts),
                h(
                  "td",
                  { class: "file", title: d.last_error || "" },
                  d.last_status ? `HTTP ${d.last_status}` : d.last_error || "—",
                ),
                h(
                  "td",
                  {},
                  d.state === "delivered"
                    ? ""
                    : h(
                        "button",
                        {
                          type: "button",
                          class: "ghost",
                          disabled: !write,
                          onclick: async () => {
                            try {
                              await api(`/v3/x402/webhooks/deliveries/${d.id}/retry`, { method: "POST" });
                              await loadDeliveries();
                            } catch (err) {
                              status(`Not retried: ${err.message}`);
                            }
                          },
                        },
                        "Retry now",
                      ),
                ),
              ),
            )
          : [
              h(
                "tr",
                {},
                h(
                  "td",
                  { colspan: 6, class: "empty" },
                  "No webhook deliveries yet. Add a webhook in a pricing file or through /v3/x402/webhooks.",
                ),
              ),
            ],
      ),
    );
  }

  // Charts follow the page's width.
  let resizeTimer;
  addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => state.data.stats && renderStats(), 150);
  });

  if (token()) start();
  else showLogin();
})();
