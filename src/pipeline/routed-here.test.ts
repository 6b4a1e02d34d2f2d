import { describe, expect, it } from 'vitest';
import {
  expectRouting,
  routedHere,
  routerStarted,
  routerStopped,
  untilRoutedHere,
} from './routed-here.js';

describe('routed here', () => {
  it('expects nothing while no router runs on the connection', async () => {
    const conn = {};
    expect(expectRouting(conn, 'c1')).toBe(false);
    await untilRoutedHere(conn, 'c1', 60_000);
  });

  it('a wait ends when the router here routed the cycle', async () => {
    const conn = {};
    routerStarted(conn);
    expect(expectRouting(conn, 'c1')).toBe(true);
    let done = false;
    const wait = untilRoutedHere(conn, 'c1', 60_000).then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(false);
    routedHere(conn, 'c1');
    await wait;
    expect(done).toBe(true);
    // Routed before anyone waited: no wait at all.
    expect(expectRouting(conn, 'c2')).toBe(true);
    routedHere(conn, 'c2');
    await untilRoutedHere(conn, 'c2', 60_000);
    routerStopped(conn);
  });

  it('a wait is bounded, and a stopped router releases every wait', async () => {
    const conn = {};
    routerStarted(conn);
    expectRouting(conn, 'c1');
    await untilRoutedHere(conn, 'c1', 5);
    expectRouting(conn, 'c2');
    const wait = untilRoutedHere(conn, 'c2', 60_000);
    routerStopped(conn);
    await wait;
    expect(expectRouting(conn, 'c3')).toBe(false);
  });
});
