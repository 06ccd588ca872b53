/**
 * A URL setting as it may be printed or logged: scheme, host and port only.
 * RPC and facilitator URLs often carry an API key in the path, the query or
 * the userinfo (Alchemy's https://base-mainnet.g.alchemy.com/v2/<key>,
 * docs/facilitator.md), and the start-up summary, `doctor` and start-up's
 * refusals end up in journals and support tickets. Whatever follows the
 * origin is replaced by "…", so a reader still sees that there was more.
 */
export function displayUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "…"; // not a URL: it might be the key itself
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return `${u.protocol}…`;
  const userinfo = u.username || u.password ? "…@" : "";
  const rest = (u.pathname !== "/" && u.pathname !== "") || u.search || u.hash ? "/…" : "";
  return `${u.protocol}//${userinfo}${u.host}${rest}`;
}
