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
