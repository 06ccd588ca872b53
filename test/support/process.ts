/** Whether a process (anvil, a CLI child) is still there, for tests that check nothing is left running. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0); // signal 0: existence check only
    return true;
  } catch {
    return false;
  }
}

/** Waits up to `ms` for the process to exit; true once it is gone. */
export async function waitGone(pid: number, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (alive(pid) && Date.now() < until) await Bun.sleep(20);
  return !alive(pid);
}
