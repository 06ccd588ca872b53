/**
 * `${VAR}` in pricing values: replaced by the environment variable; a missing
 * or empty one is an error naming it; `$${X}` is a literal `${X}`.
 */
export const ENV_REF = /\$(\$?)\{([^}]*)\}/g;

/** `value` with every `${VAR}` replaced; `fail` is told of each reference that cannot be. */
export function substitute(
  value: string,
  env: Record<string, string | undefined>,
  fail: (message: string) => void,
): string {
  return value.replace(ENV_REF, (whole, escaped: string, name: string) => {
    if (escaped) return whole.slice(1); // "$${X}" is a literal "${X}"
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      fail(`"\${${name}}" is not a valid variable reference`);
      return whole;
    }
    // Own keys only: `${constructor}` must not read Object.prototype.
    const v = Object.hasOwn(env, name) ? env[name] : undefined;
    if (typeof v !== "string" || v === "") {
      fail(`environment variable ${name} is not set`);
      return whole;
    }
    return v;
  });
}

/** The environment variables a text refers to, with their values: a parse is reused only while they stay the same. */
export function envUsed(text: string, env: Record<string, string | undefined>): [string, string | undefined][] {
  const names = new Set<string>();
  if (text.includes("${")) for (const m of text.matchAll(ENV_REF)) if (!m[1]) names.add(m[2]);
  return [...names].map((n) => [n, env[n]]);
}

export function sameEnv(used: [string, string | undefined][], env: Record<string, string | undefined>): boolean {
  return used.every(([name, value]) => env[name] === value);
}
