/** Port helpers shared by the dev launcher and the tests. */
import net from 'node:net';

/** Asks the kernel for a free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * A free port below the kernel's ephemeral range (20000-32767), with `offsets` from it free too, none in
 * `taken` (which it extends). Ports chosen by the kernel for port-0 binds (freePort, other programs'
 * metrics or test servers) are never in this range, so a port picked here is not taken by one of those
 * between the pick and its use. (The Temporal server also stores membership ports in a smallint column.)
 */
export async function freeLowPort(offsets: number[] = [0], taken: Set<number> = new Set()): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const ports = offsets.map((d) => base + d);
    if (ports.some((p) => taken.has(p) || p < 1024 || p > 32_767)) continue;
    let ok = true;
    for (const p of ports) if (!(await bindable(p))) ok = false;
    if (!ok) continue;
    for (const p of ports) taken.add(p);
    return base;
  }
}

/** n distinct free ports below the ephemeral range (see freeLowPort) */
export async function freeLowPorts(n: number): Promise<number[]> {
  const taken = new Set<number>();
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await freeLowPort([0], taken));
  return out;
}

export function isPortOpen(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Polls until something listens on the port, or throws after timeoutMs. */
export async function waitForPort(port: number, opts: { host?: string; timeoutMs?: number; what?: string } = {}): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (await isPortOpen(port, opts.host)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${opts.what ?? 'service'} did not open port ${port} within ${opts.timeoutMs ?? 60_000} ms`);
}
