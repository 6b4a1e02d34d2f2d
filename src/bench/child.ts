/**
 * A forked helper process of the benchmark, so that its CPU is not counted in the bench's own:
 *
 * - `child.js sim <services>`: the upstream simulator, with a tiny IPC control channel to change
 *   1% of the services between poll cycles (status toggles, incidents opened and resolved); with
 *   an API key in `SWBENCH_SIM_KEY` it answers the SLA and scores endpoints to that key.
 * - `child.js sink`: a webhook sink answering 200 to every POST, counting what it received.
 * - `child.js sink record`: the same sink, also recording for every POST when it arrived, its
 *   `webhook-id` header and the ids it is about (see `SinkEntry`); it verifies nothing (no
 *   signature check), it only reads the body's ids.
 *
 * The child sends `{ op: 'ready', url }` once listening and answers every request message with
 * `{ op: 'ok', id, count }` (or `{ op: 'error', id, message }`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toError } from '../errors.js';
import { buildCatalog, createSimulator, type Simulator } from '../sim/index.js';
import {
  SIM_KEY_ENV,
  SIM_KEY_SCOPES,
  SIM_SEED,
  clockMs,
  parseChildRequest,
  sinkKeysOf,
  type ChildReply,
  type ChildRequest,
  type SinkEntry,
} from './child-protocol.js';
import { BenchError } from './errors.js';

function send(reply: ChildReply): void {
  process.send?.(reply);
}

/** Services whose changes show in Variant A (official source, fresh evidence once prepared), evenly spread. */
function pickChangeSet(services: number, fraction: number): string[] {
  const official = buildCatalog(services, SIM_SEED)
    .filter((e) => e.sourceKind === 'official')
    .map((e) => e.feedId);
  const want = Math.max(1, Math.round(services * fraction));
  const step = Math.max(1, Math.floor(official.length / want));
  const out: string[] = [];
  for (let i = 0; i < official.length && out.length < want; i += step) {
    const id = official[i];
    if (id !== undefined) out.push(id);
  }
  return out;
}

async function runSim(services: number): Promise<void> {
  // With a key (SIM_KEY_ENV), the SLA and scores endpoints answer the daemon's premium polls.
  const key = process.env[SIM_KEY_ENV];
  const sim: Simulator = createSimulator({
    services,
    seed: SIM_SEED,
    rateLimit: false,
    ...(key === undefined || key === ''
      ? {}
      : { keys: { [key]: { scopes: [...SIM_KEY_SCOPES] } } }),
  });
  const url = await sim.listen(0, '127.0.0.1');
  let changeSet: string[] = [];
  let round = 0;
  const open = new Map<string, string>();

  const handle = async (req: ChildRequest): Promise<number> => {
    switch (req.op) {
      case 'prepare': {
        changeSet = pickChangeSet(services, req.fraction);
        for (const feedId of changeSet) {
          sim.setEvidence(feedId, 'fresh');
          sim.setStatus(feedId, 'operational');
        }
        return changeSet.length;
      }
      case 'change': {
        round += 1;
        if (req.kind === 'status') {
          const status = round % 2 === 1 ? 'major_outage' : 'operational';
          for (const feedId of changeSet) sim.setStatus(feedId, status);
          return changeSet.length;
        }
        if (open.size === 0) {
          for (const feedId of changeSet) {
            const id = sim.openIncident(feedId, {
              id: `bench-${round}-${feedId}`,
              title: 'Benchmark incident',
            });
            open.set(feedId, id);
          }
        } else {
          for (const [feedId, id] of open) sim.resolveIncident(feedId, id, 'Resolved');
          open.clear();
        }
        return changeSet.length;
      }
      case 'count':
        return req.path === undefined ? sim.stats.requests : (sim.stats.byPath[req.path] ?? 0);
      case 'entries':
        throw new BenchError('bench_usage', 'the simulator child records no entries');
      case 'close':
        await sim.close();
        setImmediate(() => process.exit(0));
        return 0;
    }
  };

  process.on('message', (raw: unknown) => {
    const req = parseChildRequest(raw);
    if (req === null) return;
    handle(req).then(
      (count) => {
        send({ op: 'ok', id: req.id, count });
      },
      (err: unknown) => {
        send({ op: 'error', id: req.id, message: toError(err).message });
      },
    );
  });
  send({ op: 'ready', url });
}

async function runSink(record: boolean): Promise<void> {
  let received = 0;
  const entries: SinkEntry[] = [];
  const server = createServer((req, res) => {
    if (!record) {
      req.resume();
      req.on('end', () => {
        received += 1;
        res.writeHead(200, { 'content-length': '0' });
        res.end();
      });
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = clockMs();
      received += 1;
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      const header = req.headers['webhook-id'];
      const webhookId = typeof header === 'string' ? header : '';
      entries.push({ at, webhookId, keys: sinkKeysOf(Buffer.concat(chunks).toString('utf8')) });
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  process.on('message', (raw: unknown) => {
    const req = parseChildRequest(raw);
    if (req === null) return;
    if (req.op === 'close') {
      server.close();
      server.closeAllConnections();
      send({ op: 'ok', id: req.id, count: received });
      setImmediate(() => process.exit(0));
      return;
    }
    if (req.op === 'entries') {
      send({ op: 'entries', id: req.id, entries: entries.slice(req.from) });
      return;
    }
    send({ op: 'ok', id: req.id, count: received });
  });
  send({ op: 'ready', url: `http://127.0.0.1:${port}/hook` });
}

async function main(): Promise<void> {
  // Exit when the bench goes away (IPC channel closed), never linger.
  process.on('disconnect', () => process.exit(0));
  const [mode, arg] = process.argv.slice(2);
  if (mode === 'sim') await runSim(Number(arg));
  else if (mode === 'sink') await runSink(arg === 'record');
  else
    throw new BenchError(
      'bench_usage',
      `usage: child.js sim <services> | child.js sink [record] (got ${String(mode)})`,
    );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench child failed: ${toError(err).stack ?? String(err)}\n`);
  process.exit(1);
});
