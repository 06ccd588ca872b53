// placeholder until the entitlements branch lands (replaced by its policy.ts)
export type AccessPolicy = { kind: "forever" } | { kind: "once" } | { kind: "for"; seconds: number };
export type AccessScope = "cid" | "instruction";
export function parseAccessPolicy(text: string): AccessPolicy | undefined {
  return text === "forever" ? { kind: "forever" } : text === "once" ? { kind: "once" } : undefined;
}
