/**
 * A URL setting as it may be printed or logged: scheme, host and port only.
 * RPC and facilitator URLs often carry an API key in the path, the query or
 * the userinfo (Alchemy's https://base-mainnet.g.alchemy.com/v2/<key>,
 * docs/facilitator.md), and the start-up summary, `doctor` and start-up's
 * refusals end up in journals and support tickets. Whatever follows the
 * origin is replaced by "…", so a reader still sees that there was more.
 * A PostgreSQL URL (CIDGATE_DB) keeps its host, port and database name, which
 * an operator needs to tell which server refused, and loses its userinfo and
 * query (the password may be in either).
 */
export function displayUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "…"; // not a URL: it might be the key itself
  }
  if (u.protocol === "postgres:" || u.protocol === "postgresql:") {
    const userinfo = u.username || u.password ? "…@" : "";
    return `${u.protocol}//${userinfo}${u.host}${u.pathname}${u.search || u.hash ? "?…" : ""}`;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return `${u.protocol}…`;
  const userinfo = u.username || u.password ? "…@" : "";
  const rest = (u.pathname !== "/" && u.pathname !== "") || u.search || u.hash ? "/…" : "";
  return `${u.protocol}//${userinfo}${u.host}${rest}`;
}
