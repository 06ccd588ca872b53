/**
 * Does a request prefer an HTML page to JSON? Browsers navigating send
 * `text/html,...,*\/*;q=0.8`; fetch, curl and every x402 client send `*\/*`
 * or `application/json`, and keep getting today's JSON 402. Only an explicit
 * `text/html` that weighs more than JSON counts (a tie is JSON: programs
 * that list both are served what they parse).
 */
export function prefersHtml(accept: string | null): boolean {
  if (accept === null || !accept.includes("text/html")) return false;
  let html = 0;
  let json = 0;
  for (const part of accept.split(",")) {
    const [rawType, ...params] = part.split(";");
    const type = rawType?.trim().toLowerCase();
    let q = 1;
    for (const p of params) {
      const [k, v] = p.split("=");
      if (k?.trim() === "q") q = Number(v) || 0;
    }
    if (type === "text/html") html = Math.max(html, q);
    else if (type === "application/json" || type === "application/*" || type === "*/*") json = Math.max(json, q);
  }
  return html > json;
}
