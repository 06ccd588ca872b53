/**
 * Debian's caddy in front of a server on loopback, with automatic HTTPS from
 * its own internal CA (`tls internal`): what docs/deploy.md sets up, minus
 * the public certificate. Its data (the CA) lives in a temp folder given as
 * XDG_DATA_HOME and HOME, so nothing touches the user's or the system's trust
 * store (`skip_install_trust`); clients trust the CA's root explicitly.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "./eventually";
import { systemPart } from "./system-parts";

/** caddy's path, or undefined (after a loud line; a throw under CIDGATE_REQUIRE_SYSTEM_PARTS=1). */
export const caddyPath = (suite: string) =>
  systemPart("caddy", suite, { ciInstalls: true, install: "apt-get install caddy; .ci/run installs it" });

/** A port free right now (bound, then closed): caddy takes its ports from its config. */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port;
  probe.stop(true);
  return port!;
}

export interface RunningCaddy {
  /** https://localhost:<port> */
  origin: string;
  /** The internal CA's root certificate (PEM), for the client to trust. */
  ca: string;
  /** Where that root is, for NODE_EXTRA_CA_CERTS. */
  caFile: string;
  /** caddy's own output so far (for a failing test's message). */
  output(): string;
  stop(): Promise<void>;
}

export async function startCaddy(caddy: string, upstream: string): Promise<RunningCaddy> {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-caddy-"));
  const httpsPort = freePort();
  const httpPort = freePort();
  // What docs/deploy.md's Caddyfile says, with `tls internal` for the public certificate. caddy's
  // reverse_proxy sends X-Forwarded-For and X-Forwarded-Proto by itself.
  writeFileSync(
    join(dir, "Caddyfile"),
    `{
	admin off
	skip_install_trust
	auto_https disable_redirects
	http_port ${httpPort}
	https_port ${httpsPort}
}

https://localhost:${httpsPort} {
	tls internal
	reverse_proxy ${upstream}
}
`,
  );
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: dir,
    XDG_DATA_HOME: join(dir, "data"),
    XDG_CONFIG_HOME: join(dir, "config"),
  };
  const child = Bun.spawn([caddy, "run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], {
    env,
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  for (const stream of [child.stdout, child.stderr]) {
    void (async () => {
      for await (const chunk of stream) output += new TextDecoder().decode(chunk);
    })();
  }
  const caFile = join(dir, "data/caddy/pki/authorities/local/root.crt");
  let lastError = "";
  const origin = `https://localhost:${httpsPort}`;
  const stop = async () => {
    child.kill();
    await child.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(() => existsSync(caFile) || child.exitCode !== null, "caddy's internal CA");
    if (child.exitCode !== null) throw new Error(`caddy exited: ${output}`);
    const ca = readFileSync(caFile, "utf8");
    // A handshake before the certificate for localhost exists fails; wait for caddy to say it has it.
    await eventually(() => output.includes("certificate obtained successfully"), "caddy's certificate for localhost");
    // Serving once the certificate for localhost is issued: any answer over TLS will do.
    await eventually(
      () =>
        fetch(`${origin}/healthz`, { tls: { ca } } as RequestInit).then(
          () => true,
          (e) => {
            lastError = String(e);
            return false;
          },
        ),
      "caddy answering over https",
    );
    return { origin, ca, caFile, output: () => output, stop };
  } catch (e) {
    await stop();
    throw new Error(`${(e as Error).message} (last: ${lastError})\n${output}`);
  }
}
