/**
 * The upstream client's streamed list bodies (src/upstream/json-stream.ts) against a real local
 * HTTP server that writes the body in small pieces, each flushed before the next: rows are
 * validated one by one as they arrive, malformed ones skipped and counted, and the result equals
 * what the whole-body normalizers make of the same body. Also the status memo (memo.ts): rows
 * repeated from the last poll are the same objects.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createUpstreamClient, type UpstreamClient } from '../src/upstream/client.js';
import { UpstreamError } from '../src/upstream/errors.js';
import {
  normalizeIncidentList,
  normalizeScoreReport,
  normalizeServiceList,
  normalizeSlaReport,
  normalizeStatusSnapshot,
} from '../src/upstream/normalize.js';
import * as fx from './upstream-fixtures.js';
import { RATE_HEADERS, startTestUpstream, type TestUpstream } from './upstream-helpers.js';

let up: TestUpstream;
let client: UpstreamClient;

beforeAll(async () => {
  up = await startTestUpstream();
  client = createUpstreamClient({ baseUrl: up.baseUrl, timeoutMs: 5_000 });
});

afterAll(async () => {
  await client.close();
  await up.close();
});

afterEach(() => {
  up.routes.clear();
  up.setRaw(null);
});

/** Writes `body` in pieces of `size` bytes, each after the previous one was flushed. */
function writeInPieces(res: ServerResponse, body: Buffer, size: number): void {
  res.writeHead(200, { 'content-type': 'application/json', ...RATE_HEADERS });
  let at = 0;
  const next = (): void => {
    if (at >= body.length) {
      res.end();
      return;
    }
    const piece = body.subarray(at, at + size);
    at += size;
    res.write(piece, () => {
      setImmediate(next);
    });
  };
  next();
}

function serveInPieces(path: string, body: unknown, size: number): void {
  const bytes = Buffer.from(JSON.stringify(body));
  up.setRaw((req, res, received) => {
    if (received.rawPath !== path) return false;
    req.resume();
    writeInPieces(res, bytes, size);
    return true;
  });
}

/** A status body with malformed rows among good ones (Variant A and B rows both). */
const statusWithJunk = {
  ...fx.statusA,
  data: [
    fx.statusA.data[0],
    null,
    { feedId: 12, displayStatus: 'operational' },
    'garbage',
    ...fx.statusA.data.slice(1),
    { status: 'down' },
    [1, 2, 3],
    { feedId: '', displayStatus: 'major_outage' },
  ],
};

describe('streamed list bodies', () => {
  it.each([1, 7, 64, 4096])(
    'status in %d-byte pieces: malformed rows skipped and counted, the rest as the whole-body normalizer reads it',
    async (size) => {
      serveInPieces('/api/v1/status', statusWithJunk, size);
      const res = await client.status();
      const whole = normalizeStatusSnapshot(statusWithJunk.data, statusWithJunk.meta);
      if (!whole.ok) throw new Error(whole.problem);
      expect(res.skipped).toBe(6);
      expect(res.skipped).toBe(whole.skipped);
      expect(res.data).toEqual(whole.value);
      expect(res.data.services.map((s) => s.feedId)).toEqual(
        fx.statusAExpected.services.map((s) => s.feedId),
      );
      expect(res.words?.counts).toEqual(whole.words?.counts);
    },
  );

  it('incidents and services in small pieces read as the whole-body normalizers read them', async () => {
    const incidents = {
      ...fx.incidentsA,
      data: [...fx.incidentsA.data, { feedId: 'x', title: 'no id', started: 1 }, 7],
    };
    serveInPieces('/api/v1/incidents', incidents, 5);
    const inc = await client.incidents();
    const incWhole = normalizeIncidentList(incidents.data, incidents.meta);
    if (!incWhole.ok) throw new Error(incWhole.problem);
    expect(inc.skipped).toBe(2);
    expect(inc.data).toEqual(incWhole.value);

    const services = { ...fx.servicesB, data: [...fx.servicesB.data, { name: 'no feedId' }] };
    serveInPieces('/api/v1/services', services, 3);
    const svc = await client.services();
    const svcWhole = normalizeServiceList(services.data, services.meta);
    if (!svcWhole.ok) throw new Error(svcWhole.problem);
    expect(svc.skipped).toBe(1);
    expect(svc.data).toEqual(svcWhole.value);
  });

  it('SLA and scores reports in small pieces: their lists streamed, read as the whole-body normalizers read them', async () => {
    const sla = {
      meta: { note: 'before data' },
      success: true,
      data: {
        services: [
          ...fx.sla.data.services,
          { feedId: 'no-margin', sla_target: 99, uptime_30d: 99, status: 'met' },
          null,
          { ...fx.sla.data.services[0], margin: 0.07 }, // stripe twice: both dropped
        ],
        summary: fx.sla.data.summary,
      },
    };
    serveInPieces('/api/v1/sla', sla, 5);
    const slaRes = await client.sla();
    const slaWhole = normalizeSlaReport(sla.data);
    if (!slaWhole.ok) throw new Error(slaWhole.problem);
    expect(slaRes.skipped).toBe(4);
    expect(slaRes.data).toEqual(slaWhole.value);
    expect(slaRes.data.summary).toEqual(fx.slaExpected.summary);
    expect(slaRes.data.services.map((r) => r.feedId)).toEqual(['github', 'zoom', 'slack']);
    expect(slaRes.words?.counts).toEqual(slaWhole.words?.counts);

    const scores = {
      success: true,
      data: { ...fx.scores.data, scores: [...fx.scores.data.scores, { feedId: 'x' }, 'junk'] },
    };
    serveInPieces('/api/v1/scores', scores, 3);
    const scoresRes = await client.scores();
    const scoresWhole = normalizeScoreReport(scores.data);
    if (!scoresWhole.ok) throw new Error(scoresWhole.problem);
    expect(scoresRes.skipped).toBe(2);
    expect(scoresRes.data).toEqual(scoresWhole.value);
    expect(scoresRes.data).toEqual(fx.scoresExpected);

    // A list that is not one is the same bad envelope as before.
    serveInPieces('/api/v1/sla', { success: true, data: { summary: {}, services: 5 } }, 4);
    const err = await client.sla().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).code).toBe('upstream_bad_envelope');
    expect((err as UpstreamError).message).toContain('sla: services');
  });

  it('a body cut off in the middle of a row is a bad envelope, not a partial list', async () => {
    const bytes = Buffer.from(JSON.stringify(fx.statusA));
    up.setRaw((req, res) => {
      req.resume();
      writeInPieces(res, bytes.subarray(0, Math.floor(bytes.length / 2)), 50);
      return true;
    });
    const err = await client.status().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).code).toBe('upstream_bad_envelope');
    expect((err as UpstreamError).message).toContain('not valid JSON');
  });

  it('20,000 rows in 1 KiB pieces', async () => {
    const big = fx.manyServices(20_000);
    serveInPieces('/api/v1/services', big, 1024);
    const res = await client.services();
    expect(res.skipped).toBe(0);
    expect(res.data.services).toHaveLength(20_000);
    expect(res.data.services[19_999]).toMatchObject({ feedId: 'svc-19999' });
  });
});

describe('status memo', () => {
  it('repeats the objects of unchanged rows, renews changed ones, forgets services that left', async () => {
    const c = createUpstreamClient({ baseUrl: up.baseUrl, timeoutMs: 5_000 });
    try {
      up.routes.set('/api/v1/status', { json: fx.statusA });
      const first = await c.status();
      const second = await c.status();
      expect(second.data.services).toEqual(first.data.services);
      second.data.services.forEach((s, i) => {
        expect(s).toBe(first.data.services[i]);
      });

      const [row0, ...rest] = fx.statusA.data;
      const changed = { ...row0, displayStatus: 'major_outage', summary: 'Down' };
      up.routes.set('/api/v1/status', { json: { ...fx.statusA, data: [changed, ...rest] } });
      const third = await c.status();
      expect(third.data.services[0]).not.toBe(first.data.services[0]);
      expect(third.data.services[0]).toMatchObject({ status: 'major_outage', summary: 'Down' });
      expect(third.data.services[0]?.canonicalUrl).toBe(first.data.services[0]?.canonicalUrl);
      third.data.services.slice(1).forEach((s, i) => {
        expect(s).toBe(first.data.services[i + 1]);
      });

      // A service gone from the list is gone from the memo: it comes back as a new object.
      up.routes.set('/api/v1/status', { json: { ...fx.statusA, data: rest } });
      await c.status();
      up.routes.set('/api/v1/status', { json: fx.statusA });
      const back = await c.status();
      expect(back.data.services[0]).toEqual(first.data.services[0]);
      expect(back.data.services[0]).not.toBe(first.data.services[0]);

      // `include=` rows are not memoized (another shape of the same services).
      up.routes.set('/api/v1/status', { json: fx.statusA });
      const withIncidents = await c.status({ include: 'incidents' });
      expect(withIncidents.data.services[1]).not.toBe(back.data.services[1]);
      expect(withIncidents.data.services[1]).toEqual(back.data.services[1]);
    } finally {
      await c.close();
    }
  });
});
