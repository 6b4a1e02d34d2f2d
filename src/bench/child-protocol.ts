/**
 * The IPC protocol between the bench and its forked helper (`child.ts`), and the parent side:
 * `startChild` forks it, waits for its URL and sends requests that resolve with the child's count
 * (or, from a recording sink, with what it received).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { withTimeout } from './support.js';
import { BenchError } from './errors.js';

export const SIM_SEED = 42;

export type ChangeKind = 'status' | 'incidents';

/**
 * Wall-clock milliseconds with sub-millisecond resolution, comparable between the bench and its
 * children on one machine (each process's `timeOrigin` is an epoch time).
 */
export function clockMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * One POST a recording sink (`child.js sink record`) received: when (`clockMs()`), its
 * `webhook-id` header ('' when absent) and the ids it is about: the incident id of a statuswatch
 * webhook (every event's of a batch), or the `storm_id` label of every alert of an Alertmanager
 * webhook.
 */
export interface SinkEntry {
  at: number;
  webhookId: string;
  keys: string[];
}

export type ChildRequest =
  | { op: 'prepare'; id: number; kind: ChangeKind; fraction: number }
  | { op: 'change'; id: number; kind: ChangeKind }
  /** The simulator's requests so far: all of them, or those of one pathname (`/api/v1/incidents`). */
  | { op: 'count'; id: number; path?: string }
  | { op: 'entries'; id: number; from: number }
  | { op: 'close'; id: number };

export type ChildReply =
  | { op: 'ready'; url: string }
  | { op: 'ok'; id: number; count: number }
  | { op: 'entries'; id: number; entries: SinkEntry[] }
  | { op: 'error'; id: number; message: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function incidentIdOf(event: unknown): string | null {
  if (!isRecord(event)) return null;
  const incident = event.incident;
  return isRecord(incident) && typeof incident.id === 'string' ? incident.id : null;
}

/**
 * The ids a webhook body is about: a statuswatch event's incident id (`data.incident.id`, or each
 * of `data.events[]` of a batch), or the `storm_id` label of each of an Alertmanager body's
 * `alerts[]`. Nothing else is checked.
 */
export function sinkKeysOf(body: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  if (!isRecord(parsed)) return [];
  const keys: string[] = [];
  if (Array.isArray(parsed.alerts)) {
    for (const alert of parsed.alerts as unknown[]) {
      const labels = isRecord(alert) ? alert.labels : undefined;
      if (isRecord(labels) && typeof labels.storm_id === 'string') keys.push(labels.storm_id);
    }
    return keys;
  }
  const data = parsed.data;
  if (!isRecord(data)) return keys;
  const single = incidentIdOf(data);
  if (single !== null) keys.push(single);
  if (Array.isArray(data.events)) {
    for (const event of data.events as unknown[]) {
      const id = incidentIdOf(event);
      if (id !== null) keys.push(id);
    }
  }
  return keys;
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
      return typeof value.path === 'string'
        ? { op: 'count', id, path: value.path }
        : { op: 'count', id };
    case 'entries':
      return typeof value.from === 'number' && Number.isInteger(value.from) && value.from >= 0
        ? { op: 'entries', id, from: value.from }
        : null;
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
  if (value.op === 'entries' && Array.isArray(value.entries)) {
    const entries: SinkEntry[] = [];
    for (const e of value.entries as unknown[]) {
      if (
        !isRecord(e) ||
        typeof e.at !== 'number' ||
        typeof e.webhookId !== 'string' ||
        !Array.isArray(e.keys) ||
        !e.keys.every((k) => typeof k === 'string')
      )
        return null;
      entries.push({ at: e.at, webhookId: e.webhookId, keys: e.keys });
    }
    return { op: 'entries', id: value.id, entries };
  }
  return null;
}

/** A request without its id (the handle numbers them). */
type Request = ChildRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

type Answer = Exclude<ChildReply, { op: 'ready' } | { op: 'error' }>;

/** The parent's handle on a forked helper. */
export class ChildHandle {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (reply: Answer) => void; reject: (err: Error) => void }
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
      if (reply.op === 'error')
        waiter.reject(new BenchError('bench_child', `bench child: ${reply.message}`));
      else waiter.resolve(reply);
    });
    child.on('exit', (code) => {
      for (const waiter of this.pending.values())
        waiter.reject(new BenchError('bench_child', `bench child exited (code ${String(code)})`));
      this.pending.clear();
    });
  }

  /** Sends `req`; resolves with the child's count. */
  async request(req: Request, timeoutMs = 60_000): Promise<number> {
    const reply = await this.send(req, timeoutMs);
    if (reply.op !== 'ok')
      throw new BenchError('bench_child', `bench child answered ${req.op} with ${reply.op}`);
    return reply.count;
  }

  /** What a recording sink received, from its `from`-th POST on (in arrival order). */
  async entries(from: number, timeoutMs = 60_000): Promise<SinkEntry[]> {
    const reply = await this.send({ op: 'entries', from }, timeoutMs);
    if (reply.op !== 'entries')
      throw new BenchError('bench_child', `bench child answered entries with ${reply.op}`);
    return reply.entries;
  }

  private send(req: Request, timeoutMs: number): Promise<Answer> {
    const id = this.nextId++;
    const done = new Promise<Answer>((resolve, reject) => {
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

/** The environment variable that gives the simulator child an API key (scopes SIM_KEY_SCOPES). */
export const SIM_KEY_ENV = 'SWBENCH_SIM_KEY';
/** What the simulator child's key may read: the premium polls the daemon makes with a key. */
export const SIM_KEY_SCOPES = ['sla:read', 'scores:read'] as const;

/**
 * Forks `child.js` with `args` (`['sim', '2000']`, `['sink']` or `['sink', 'record']`) and waits
 * for its URL. `env` adds to this process's environment (a key in SIM_KEY_ENV: the simulator
 * accepts it; through the environment, not argv, so that `ps` does not show it).
 */
export async function startChild(
  args: readonly string[],
  timeoutMs = 120_000,
  env: Readonly<Record<string, string>> = {},
): Promise<ChildHandle> {
  const script = fileURLToPath(new URL('./child.js', import.meta.url));
  const child = fork(script, [...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...env },
  });
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
