/**
 * The IPC protocol between the bench and its forked helper (`child.ts`), and the parent side:
 * `startChild` forks it, waits for its URL and sends requests that resolve with the child's count.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { withTimeout } from './support.js';
import { BenchError } from './errors.js';

export const SIM_SEED = 42;

export type ChangeKind = 'status' | 'incidents';

export type ChildRequest =
  | { op: 'prepare'; id: number; kind: ChangeKind; fraction: number }
  | { op: 'change'; id: number; kind: ChangeKind }
  | { op: 'count'; id: number }
  | { op: 'close'; id: number };

export type ChildReply =
  | { op: 'ready'; url: string }
  | { op: 'ok'; id: number; count: number }
  | { op: 'error'; id: number; message: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export function parseChildRequest(value: unknown): ChildRequest | null {
  if (!isRecord(value) || typeof value.id !== 'number') return null;
  const { id } = value;
  const kind = value.kind === 'status' || value.kind === 'incidents' ? value.kind : null;
  switch (value.op) {
    case 'prepare':
      return kind !== null && typeof value.fraction === 'number'
        ? { op: 'prepare', id, kind, fraction: value.fraction }
        : null;
    case 'change':
      return kind !== null ? { op: 'change', id, kind } : null;
    case 'count':
      return { op: 'count', id };
    case 'close':
      return { op: 'close', id };
    default:
      return null;
  }
}

export function parseChildReply(value: unknown): ChildReply | null {
  if (!isRecord(value)) return null;
  if (value.op === 'ready' && typeof value.url === 'string') return { op: 'ready', url: value.url };
  if (typeof value.id !== 'number') return null;
  if (value.op === 'ok' && typeof value.count === 'number')
    return { op: 'ok', id: value.id, count: value.count };
  if (value.op === 'error' && typeof value.message === 'string')
    return { op: 'error', id: value.id, message: value.message };
  return null;
}

/** A request without its id (the handle numbers them). */
type Request = ChildRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

/** The parent's handle on a forked helper. */
export class ChildHandle {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (count: number) => void; reject: (err: Error) => void }
  >();

  constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {
    child.on('message', (raw: unknown) => {
      const reply = parseChildReply(raw);
      if (reply === null || reply.op === 'ready') return;
      const waiter = this.pending.get(reply.id);
      if (waiter === undefined) return;
      this.pending.delete(reply.id);
      if (reply.op === 'ok') waiter.resolve(reply.count);
      else waiter.reject(new BenchError('bench_child', `bench child: ${reply.message}`));
    });
    child.on('exit', (code) => {
      for (const waiter of this.pending.values())
        waiter.reject(new BenchError('bench_child', `bench child exited (code ${String(code)})`));
      this.pending.clear();
    });
  }

  request(req: Request, timeoutMs = 60_000): Promise<number> {
    const id = this.nextId++;
    const done = new Promise<number>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
    });
    this.child.send({ ...req, id });
    return withTimeout(done, timeoutMs, `bench child ${req.op}`);
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) =>
      this.child.once('exit', () => {
        resolve();
      }),
    );
    try {
      await this.request({ op: 'close' }, 10_000);
    } catch {
      this.child.kill();
    }
    await withTimeout(exited, 10_000, 'bench child exit').catch(() => {
      this.child.kill('SIGKILL');
    });
  }
}

/** Forks `child.js` with `args` (`['sim', '2000']` or `['sink']`) and waits for its URL. */
export async function startChild(
  args: readonly string[],
  timeoutMs = 120_000,
): Promise<ChildHandle> {
  const script = fileURLToPath(new URL('./child.js', import.meta.url));
  const child = fork(script, [...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise<string>((resolve, reject) => {
    const onMessage = (raw: unknown): void => {
      const reply = parseChildReply(raw);
      if (reply?.op !== 'ready') return;
      child.off('message', onMessage);
      resolve(reply.url);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => {
      reject(
        new BenchError(
          'bench_child',
          `bench child ${args.join(' ')} exited early (code ${String(code)})`,
        ),
      );
    });
    child.once('error', reject);
  });
  try {
    const url = await withTimeout(ready, timeoutMs, `bench child ${args.join(' ')} to listen`);
    return new ChildHandle(child, url);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}
