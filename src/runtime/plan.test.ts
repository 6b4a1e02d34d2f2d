import { describe, expect, it } from 'vitest';
import { parseRoles } from './config.js';
import {
  autoThreads,
  planThreads,
  quotaOfCfs,
  quotaOfCpuMax,
  usableCoresOf,
  type Role,
} from './plan.js';

const ALL: Role[] = ['poll', 'route', 'deliver'];

describe('planThreads', () => {
  it('auto on 2 cores: the main thread runs every role, one spare delivery thread for storms', () => {
    expect(planThreads({ threads: 'auto', roles: ALL, cores: 2 })).toEqual({
      main: ALL,
      upstream: null,
      delivery: 0,
      spare: 1,
      total: 2,
    });
  });

  it('auto on 1 core is one thread, as threads: 1', () => {
    expect(planThreads({ threads: 'auto', roles: ALL, cores: 1 })).toEqual(
      planThreads({ threads: 1, roles: ALL, cores: 1 }),
    );
  });

  it('auto on 4 cores has three spares; on 64 it stops at 8 threads; without deliver none', () => {
    expect(planThreads({ threads: 'auto', roles: ALL, cores: 4 })).toMatchObject({
      main: ALL,
      spare: 3,
      total: 4,
    });
    expect(planThreads({ threads: 'auto', roles: ALL, cores: 64 })).toMatchObject({
      spare: 7,
      total: 8,
    });
    expect(planThreads({ threads: 'auto', roles: ['poll', 'route'], cores: 4 })).toEqual({
      main: ['poll', 'route'],
      upstream: null,
      delivery: 0,
      spare: 0,
      total: 1,
    });
  });

  it('an explicit count keeps its threads running: the upstream thread, the main one, delivery threads', () => {
    expect(planThreads({ threads: 2, roles: ALL, cores: 8 })).toEqual({
      main: ['deliver'],
      upstream: ['poll', 'route', 'deliver'],
      delivery: 0,
      spare: 0,
      total: 2,
    });
    expect(planThreads({ threads: 4, roles: ALL, cores: 2 })).toMatchObject({
      delivery: 2,
      spare: 0,
      total: 4,
    });
  });

  it('threads: 1 runs every role in the main thread, as before', () => {
    expect(planThreads({ threads: 1, roles: ALL, cores: 16 })).toEqual({
      main: ALL,
      upstream: null,
      delivery: 0,
      spare: 0,
      total: 1,
    });
  });

  it('a delivery-only process delivers on every thread', () => {
    expect(planThreads({ threads: 3, roles: ['deliver'], cores: 8 })).toEqual({
      main: ['deliver'],
      upstream: null,
      delivery: 2,
      spare: 0,
      total: 3,
    });
  });

  it('a process without deliver runs poll and route in the upstream thread and no delivery thread', () => {
    expect(planThreads({ threads: 4, roles: ['route', 'poll'], cores: 8 })).toEqual({
      main: [],
      upstream: ['poll', 'route'],
      delivery: 0,
      spare: 0,
      total: 2,
    });
  });

  it('autoThreads is bounded below by 1 and above by 8', () => {
    expect([1, 2, 3, 8, 9, 128].map(autoThreads)).toEqual([1, 2, 3, 8, 8, 8]);
  });
});

describe('cgroup CPU quota', () => {
  it('reads cgroup v2 cpu.max', () => {
    expect(quotaOfCpuMax('max 100000\n')).toBeNull();
    expect(quotaOfCpuMax('200000 100000\n')).toBe(2);
    expect(quotaOfCpuMax('150000 100000')).toBe(1.5);
    expect(quotaOfCpuMax('garbage')).toBeNull();
  });

  it('reads cgroup v1 cfs quota and period (-1 = none)', () => {
    expect(quotaOfCfs('-1\n', '100000\n')).toBeNull();
    expect(quotaOfCfs('50000', '100000')).toBe(0.5);
  });

  it('bounds the parallelism by the quota, rounded up, at least one core', () => {
    expect(usableCoresOf(64, null)).toBe(64);
    expect(usableCoresOf(64, 1.5)).toBe(2);
    expect(usableCoresOf(64, 0.5)).toBe(1);
    expect(usableCoresOf(2, 4)).toBe(2);
  });
});

describe('parseRoles (--role)', () => {
  it('accepts a comma-separated list, once each', () => {
    expect(parseRoles('deliver')).toEqual(['deliver']);
    expect(parseRoles('poll, route,poll')).toEqual(['poll', 'route']);
  });

  it('names the bad role and the choices', () => {
    expect(parseRoles('poll,send')).toEqual({
      error: '--role: unknown role "send"; expected one of: poll, route, deliver',
    });
    const empty = parseRoles(' , ');
    expect('error' in empty && empty.error.startsWith('--role:')).toBe(true);
  });
});
