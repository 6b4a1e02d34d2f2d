import { describe, expect, it } from 'vitest';
import { RoutedHere } from './routed-here.js';

describe('routed here', () => {
  it('expects nothing while no router runs here', async () => {
    const here = new RoutedHere();
    expect(here.expect('c1')).toBe(false);
    await here.until('c1', 60_000);
  });

  it('a wait ends when the router here routed the cycle', async () => {
    const here = new RoutedHere();
    here.routerStarted();
    expect(here.expect('c1')).toBe(true);
    let done = false;
    const wait = here.until('c1', 60_000).then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(false);
    here.routed('c1');
    await wait;
    expect(done).toBe(true);
    // Routed before anyone waited: no wait at all.
    expect(here.expect('c2')).toBe(true);
    here.routed('c2');
    await here.until('c2', 60_000);
    here.routerStopped();
  });

  it('a wait is bounded, and a stopped router releases every wait', async () => {
    const here = new RoutedHere();
    here.routerStarted();
    here.expect('c1');
    await here.until('c1', 5);
    here.expect('c2');
    const wait = here.until('c2', 60_000);
    here.routerStopped();
    await wait;
    expect(here.expect('c3')).toBe(false);
  });
});
