import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SlotBroker, startSlotBroker } from '../../harness/slots.ts';

// The broker that keeps harness files running at the same time on different servers: each test
// process here claims a slot as a harness file's process does, and holds it until it ends.

const slotsModule = path.resolve(import.meta.dirname, '../../harness/slots.ts');
let broker: SlotBroker;
const children: ChildProcess[] = [];

beforeAll(async () => {
  broker = await startSlotBroker();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await broker.close();
});

/** A process that claims a slot, prints it, and holds it until killed. */
async function claimer(): Promise<{ readonly slot: number; readonly child: ChildProcess }> {
  const script =
    `const { claimSlot } = await import(${JSON.stringify(slotsModule)});` +
    `console.log(await claimSlot(${JSON.stringify(broker.socketPath)}));` +
    'setInterval(() => undefined, 60_000);';
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let out = '';
  for await (const chunk of child.stdout ?? []) {
    out += String(chunk);
    if (out.includes('\n')) break;
  }
  return { slot: Number(out.trim()), child };
}

describe('worker slots', () => {
  it('gives processes that run at the same time different slots, and a freed slot to the next', async () => {
    const [a, b] = await Promise.all([claimer(), claimer()]);
    expect([a.slot, b.slot].sort()).toEqual([1, 2]);

    // The slot is held for as long as the process lives, however it ends.
    const first = a.slot === 1 ? a : b;
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    const c = await claimer();
    expect(c.slot).toBe(1);

    // With both slots held again, a third process gets a slot of its own.
    const d = await claimer();
    expect(d.slot).toBe(3);
  }, 60_000);
});
