/**
 * `GET /admin/dead-letters` is paged as the API's lists are (`?limit=&cursor=` → `next`), over
 * more dead letters than a page and than the old fixed cap of 100: real dead letters (a receiver
 * answering 404 on loopback, a real delivery worker and queue in Redis under a prefix of its own)
 * listed by a real ops server, each one exactly once across the pages.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpsServer } from '../src/server/ops.js';
import { createMetrics } from '../src/server/metrics.js';
import type { Notification } from '../src/notify/types.js';
import { deliveryHarness, webhookChannel, type DeliveryHarness } from './helpers/delivery.js';
import { notification, startReceiver, transition, type Receiver } from './notify-helpers.js';
import { waitFor } from './helpers/wait.js';

const TOKEN = 'adm_deadletters_0123456789abcdef';
const COUNT = 130;

let h: DeliveryHarness;
let rx: Receiver;
let ops: OpsServer;
let base = '';

function delivery(i: number): Notification {
  const t = transition('incident.opened', {
    id: `tdeadpage${String(i).padStart(4, '0')}0123456789`,
    subject: `incident:page-${String(i)}`,
  });
  return notification([t], { id: `${t.id}:payments:hook`, channel: 'hook', createdAt: Date.now() });
}

beforeAll(async () => {
  h = await deliveryHarness();
  rx = await startReceiver(() => ({ status: 404 }), '/hooks/statuswatch');
  const registry = h.registry({ hook: webhookChannel(rx.url) });
  h.startWorker(() => registry, { backoff: () => 50 });
  await h.queue.enqueue(Array.from({ length: COUNT }, (_, i) => delivery(i)));
  await waitFor(async () => (await h.queue.deadLetters()).length === COUNT, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: `${String(COUNT)} dead letters`,
  });
  ops = new OpsServer({
    port: 0,
    host: '127.0.0.1',
    metrics: createMetrics(),
    readiness: () => Promise.resolve({ ready: true, checks: {} }),
    adminToken: () => TOKEN,
    admin: {
      deadLetters: () => h.queue.deadLetters(),
      retryDeadLetter: () => Promise.resolve({ outcome: 'missing' }),
      serviceState: () => Promise.resolve(null),
      vocabulary: () => Promise.resolve([]),
    },
    log: pino({ level: 'silent' }),
  });
  base = `http://127.0.0.1:${String(await ops.start())}`;
}, 90_000);

afterAll(async () => {
  await ops.stop();
  await h.close();
  await rx.close();
});

async function get(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

type Letter = { id: string; failedAt: number | null };

describe('GET /admin/dead-letters: paged', () => {
  it('pages every dead letter once, newest first, past the default page of 100', async () => {
    const first = await get('/admin/dead-letters');
    expect(first.status).toBe(200);
    expect(first.body.deadLetters as Letter[]).toHaveLength(100);
    expect(typeof first.body.next).toBe('string');

    const seen: Letter[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const page = await get(`/admin/dead-letters?limit=40${query}`);
      expect(page.status).toBe(200);
      seen.push(...(page.body.deadLetters as Letter[]));
      cursor = page.body.next as string | null;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(Math.ceil(COUNT / 40));
    expect(seen).toHaveLength(COUNT);
    expect(new Set(seen.map((l) => l.id)).size).toBe(COUNT);
    const at = seen.map((l) => l.failedAt ?? 0);
    expect(at).toEqual([...at].sort((a, b) => b - a));
  });

  it('a bad limit or cursor is a 400 naming it', async () => {
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=x', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
    ] as const) {
      const res = await get(`/admin/dead-letters?${query}`);
      expect(res.status, query).toBe(400);
      expect((res.body.error as { field: string }).field, query).toBe(field);
    }
  });
});
