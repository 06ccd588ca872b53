import { parseDocument, LineCounter, isMap, isSeq, isPair, isScalar } from "yaml";
const PAY_TO = "0x1111111111111111111111111111111111111111";
function text(f: number) { const out = [`defaults:`, `  network: base-sepolia`, `  pay_to: "${PAY_TO}"`, `instructions:`];
for (let n = f*1000; n < f*1000+1000; n++) out.push(`  item-${n}:`, `    name: Item ${n}`, `    description: Example item number ${n}`, `    payment_requirements:`, `      - price: "$0.10"`, `    cids: [bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e]`);
return out.join("\n"); }
function dups(node: any, found: string[]) {
  if (isMap(node)) { const seen = new Set(); for (const p of node.items) { const k = isScalar(p.key) ? String(p.key.value) : JSON.stringify(p.key); if (seen.has(k)) found.push(k); seen.add(k); dups(p.value, found); } }
  else if (isSeq(node)) for (const i of node.items) dups(i, found);
}
const mode = process.argv[2];
let t0 = performance.now();
for (let f = 0; f < 10; f++) {
  const t = performance.now();
  const doc = parseDocument(text(f), { lineCounter: new LineCounter(), uniqueKeys: mode === "uniq", prettyErrors: false });
  if (mode !== "uniq") { const found: string[] = []; dups(doc.contents, found); }
  const js = doc.toJS();
  if (f === 0 || f === 9) console.log(mode, f, (performance.now() - t).toFixed(1));
}
console.log(mode, "total", (performance.now() - t0).toFixed(1));
