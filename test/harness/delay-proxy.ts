import net from 'node:net';

// A TCP proxy on the loopback that holds back what the server sends by a delay the test sets: the
// network fault of a client that falls behind its server (a slow link, a congested node), injected
// below TLS, so the client and the server are the real ones and see each other's real bytes, only
// late. Each byte keeps its place: a chunk is released no sooner than the one before it.

export interface DelayProxy {
  /** `127.0.0.1:<port>`, to put in place of the server's address. */
  readonly address: string;
  /** Holds back every chunk the server sends from now on by `ms`. */
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export async function startDelayProxy(target: { host: string; port: number }): Promise<DelayProxy> {
  let delayMs = 0;
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    let releaseAt = 0;
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      releaseAt = Math.max(releaseAt, Date.now() + delayMs);
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!client.destroyed) client.write(chunk);
      }, releaseAt - Date.now());
      timers.add(timer);
    });
    const end = () => {
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          client.destroy();
        },
        Math.max(0, releaseAt - Date.now()),
      );
      timers.add(timer);
    };
    upstream.on('end', end);
    upstream.on('error', end);
    client.on('error', () => upstream.destroy());
    client.on('close', () => {
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    setDelay(ms) {
      delayMs = ms;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
