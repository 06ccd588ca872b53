import { parseDocument, LineCounter, Parser, parse } from "yaml";
const PAY_TO = "0x1111111111111111111111111111111111111111";
const out = [`defaults:`, `  network: base-sepolia`, `  pay_to: "${PAY_TO}"`, `instructions:`];
for (let n = 0; n < 1000; n++) out.push(`  item-${n}:`, `    name: Item ${n}`, `    description: Example item number ${n}`, `    payment_requirements:`, `      - price: "$0.10"`, `    cids: [bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e]`);
const text = out.join("\n");
console.log("bytes", text.length);
for (let rep = 0; rep < 3; rep++) {
let t = performance.now();
parseDocument(text, { lineCounter: new LineCounter() });
console.log("parseDocument+lc", performance.now() - t); t = performance.now();
parseDocument(text);
console.log("parseDocument", performance.now() - t); t = performance.now();
parseDocument(text, { uniqueKeys: false });
console.log("parseDocument nouniq", performance.now() - t); t = performance.now();
for (const _ of new Parser().parse(text)) {}
console.log("CST", performance.now() - t); t = performance.now();
// @ts-ignore
const y = (Bun as any).YAML?.parse(text);
console.log("Bun.YAML", performance.now() - t, !!y); t = performance.now();
}
