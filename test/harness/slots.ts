import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { HarnessError } from './errors.ts';

// Worker slots. Each harness test file runs in a process of its own, and the files that run one
// after another reuse a set of servers (moto, the control plane) kept in `worker-<slot>`. Two
// files that run at the same time must never hold the same slot: they would reset each other's
// moto and see each other's Nodes. vitest's VITEST_POOL_ID does not promise that (with several
// projects, files that run at the same time can get the same one), so the vitest process hands the
// slots out itself: a test process connects to its socket and gets the lowest slot no live process
// holds; the slot is free again when that connection closes, which the operating system does when
// the process ends, however it ends.

/**
 * How long a request waits for a held slot to free before a new slot (new servers) is opened: a
 * file's process may still be closing while the next file's starts.
 */
const REUSE_WAIT_MS = 3_000;

export interface SlotBroker {
  readonly socketPath: string;
  close(): Promise<void>;
}

/** Starts the slot broker in the vitest process. */
export async function startSlotBroker(): Promise<SlotBroker> {
  const socketPath = path.join(os.tmpdir(), `flotilla-harness-slots-${process.pid}.sock`);
  fs.rmSync(socketPath, { force: true });
  const held = new Set<number>();
  /** The highest slot granted so far: slots up to it have servers running. */
  let highest = 0;
  const waiting: { readonly grant: (slot: number) => void; readonly since: number }[] = [];

  const lowestFree = (): number => {
    let slot = 1;
    while (held.has(slot)) slot += 1;
    return slot;
  };
  /** Grants the waiting requests in order, as long as the first can be granted now. */
  const serve = (): void => {
    while (waiting.length > 0) {
      const first = waiting[0];
      if (first === undefined) return;
      const slot = lowestFree();
      // A slot up to the highest granted has servers running: take it at once. A new one (the
      // first aside) is opened only after REUSE_WAIT_MS.
      if (slot > highest && highest > 0 && Date.now() - first.since < REUSE_WAIT_MS) return;
      waiting.shift();
      first.grant(slot);
    }
  };
  const timer = setInterval(serve, 500);
  timer.unref();

  const server = net.createServer((socket) => {
    let slot: number | undefined;
    // A reset connection means its process ended: 'close' follows and frees the slot.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (slot !== undefined) held.delete(slot);
      const index = waiting.findIndex((w) => w.grant === grant);
      if (index >= 0) waiting.splice(index, 1);
      serve();
    });
    const grant = (granted: number): void => {
      slot = granted;
      held.add(granted);
      highest = Math.max(highest, granted);
      socket.write(`${granted}\n`);
    };
    waiting.push({ grant, since: Date.now() });
    serve();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    socketPath,
    close: async () => {
      clearInterval(timer);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(socketPath, { force: true });
    },
  };
}

/**
 * Where this process keeps its claim: on the global object, since a worker that runs several files
 * evaluates this module afresh for each (test/harness/fresh-modules.ts) and must keep its slot.
 */
const CLAIM = Symbol.for('flotilla.harness.slot');

/**
 * This process's slot, held until it ends (asked for once; the connection does not keep the
 * process alive).
 * @throws HarnessError when the broker cannot be reached or closes before granting a slot.
 */
export function claimSlot(socketPath: string): Promise<number> {
  const processState = globalThis as { [CLAIM]?: Promise<number> };
  processState[CLAIM] ??= new Promise<number>((resolve, reject) => {
    const socket = net.connect(socketPath);
    let received = '';
    const fail = (why: string): void =>
      reject(new HarnessError(`no harness worker slot from ${socketPath}: ${why}`));
    socket.on('error', (error) => fail(error.message));
    socket.on('close', () => fail('the vitest process closed the connection'));
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
      const line = /^(\d+)\n/.exec(received);
      if (line === null) return;
      socket.unref();
      resolve(Number(line[1]));
    });
  });
  return processState[CLAIM];
}
