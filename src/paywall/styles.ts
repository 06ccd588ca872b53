/**
 * The pages' one stylesheet, inlined in each page (one request to first
 * paint) and allowed by its hash in the Content-Security-Policy. System
 * fonts only: nothing is fetched from anywhere but cidgate.
 */
import { createHash } from "node:crypto";

export const CSS = `
:root{color-scheme:light dark;--bg:#f7f7f5;--card:#fff;--fg:#1b1b1f;--muted:#5c5c66;--line:#dcdce2;--accent:#1652f0;--accent-fg:#fff;--ok:#0b7a3b;--bad:#b3261e;--focus:#ff9f1a}
@media (prefers-color-scheme:dark){:root{--bg:#121215;--card:#1c1c21;--fg:#ececf1;--muted:#a4a4b0;--line:#34343c;--accent:#5b8cff;--accent-fg:#0b0b0e;--ok:#4cc38a;--bad:#ff8a80}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header.site,main,footer{max-width:40rem;margin:0 auto;padding:0 1rem}
header.site{display:flex;align-items:center;gap:.6rem;padding-top:1rem;padding-bottom:1rem;font-weight:600}
header.site img{height:2rem;width:auto;max-width:8rem}
header.site a{color:inherit;text-decoration:none;display:flex;align-items:center;gap:.6rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1.25rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 .4rem;overflow-wrap:anywhere}
p{margin:.4rem 0}
.desc{color:var(--muted)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:1rem 0}
dt{color:var(--muted)}
dd{margin:0;min-width:0;overflow-wrap:anywhere}
code{font:.9em ui-monospace,SFMono-Regular,Menlo,monospace}
.price{font-size:1.75rem;font-weight:700;margin:1rem 0 0}
.price small{font-size:1rem;font-weight:400;color:var(--muted)}
.actions{display:flex;flex-wrap:wrap;gap:.6rem;margin-top:1.25rem}
button,.button{font:inherit;font-weight:600;border-radius:8px;padding:.7rem 1.1rem;border:1px solid var(--accent);cursor:pointer;text-decoration:none;display:inline-block;text-align:center}
button.primary,.button.primary{background:var(--accent);color:var(--accent-fg)}
button.secondary,.button.secondary{background:transparent;color:var(--accent)}
button:disabled{opacity:.55;cursor:progress}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
a{color:var(--accent)}
.wallets{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:1rem}
.wallets img{width:1.25rem;height:1.25rem;vertical-align:-.2rem;margin-right:.4rem}
ol.steps{list-style:none;padding:0;margin:1.25rem 0 0}
ol.steps li{padding:.35rem 0 .35rem 1.9rem;position:relative;color:var(--muted)}
ol.steps li::before{content:"";position:absolute;left:.3rem;top:.7rem;width:.8rem;height:.8rem;border-radius:50%;border:2px solid var(--line)}
ol.steps li[data-state=active]{color:var(--fg);font-weight:600}
ol.steps li[data-state=active]::before{border-color:var(--accent);border-right-color:transparent;animation:spin 1s linear infinite}
ol.steps li[data-state=done]{color:var(--fg)}
ol.steps li[data-state=done]::before{background:var(--ok);border-color:var(--ok)}
@keyframes spin{to{transform:rotate(360deg)}}
@media (prefers-reduced-motion:reduce){ol.steps li[data-state=active]::before{animation:none}}
.status{overflow-wrap:anywhere;margin-top:1rem;padding:.8rem 1rem;border-radius:8px;border:1px solid var(--line)}
.status[data-kind=error]{border-color:var(--bad)}
.status[data-kind=error] strong{color:var(--bad)}
.status[data-kind=ok]{border-color:var(--ok)}
.status:empty{display:none}
ul.items{list-style:none;padding:0;margin:0;display:grid;gap:.75rem}
ul.items a{display:block;color:inherit;text-decoration:none}
ul.items a:hover h2,ul.items a:focus-visible h2{text-decoration:underline}
ul.items h2{font-size:1.1rem;margin:0}
footer{color:var(--muted);font-size:.85rem;padding-top:1.5rem;padding-bottom:2rem}
[hidden]{display:none!important}
`
  .trim()
  .replace(/\n/g, "");

/** For the Content-Security-Policy: only this inline style is allowed. */
export const CSS_HASH = `sha256-${createHash("sha256").update(CSS).digest("base64")}`;
