import { describe, expect, it } from 'vitest';
import {
  REEXEC_MARKER_ENV,
  heapReport,
  mainHeapFlags,
  reexecPlan,
  type ReexecInput,
} from './reexec.js';

const base: ReexecInput = {
  mainRoles: ['poll', 'route', 'deliver'],
  execPath: '/usr/bin/node',
  execArgv: ['--enable-source-maps'],
  argv: ['/usr/bin/node', '/app/dist/cli.js', 'run', '--config', '/etc/sw.yaml'],
  env: { PATH: '/usr/bin', UNSET: undefined },
  canExecve: true,
};

describe('mainHeapFlags', () => {
  it('gives a main thread that polls or routes the upstream semi-space, a delivering one 8 MB', () => {
    expect(mainHeapFlags(['poll', 'route', 'deliver'])).toEqual(['--max-semi-space-size=2']);
    expect(mainHeapFlags(['route'])).toEqual(['--max-semi-space-size=2']);
    expect(mainHeapFlags(['deliver'])).toEqual(['--max-semi-space-size=8']);
    expect(mainHeapFlags([])).toEqual([]);
  });
});

describe('reexecPlan', () => {
  it('re-executes the same command with the flag first, the marker set, unset variables left out', () => {
    expect(reexecPlan(base)).toEqual({
      file: '/usr/bin/node',
      args: [
        '/usr/bin/node',
        '--max-semi-space-size=2',
        '--heap-growing-percent=10',
        '--enable-source-maps',
        '/app/dist/cli.js',
        'run',
        '--config',
        '/etc/sw.yaml',
      ],
      env: { PATH: '/usr/bin', MALLOC_ARENA_MAX: '2', [REEXEC_MARKER_ENV]: '1' },
      flags: ['--max-semi-space-size=2', '--heap-growing-percent=10'],
      allocator: ['MALLOC_ARENA_MAX'],
    });
  });

  it("adds the startup flags of the process's V8 version, unless the operator gave one", () => {
    expect(reexecPlan({ ...base, v8Version: '14.6.202.34-node.40' })?.flags).toEqual([
      '--max-semi-space-size=2',
      '--heap-growing-percent=10',
      '--memory-pool-timeout=0',
    ]);
    expect(reexecPlan({ ...base, v8Version: '13.6.233.10' })?.flags).toEqual([
      '--max-semi-space-size=2',
      '--heap-growing-percent=10',
    ]);
    expect(
      reexecPlan({ ...base, v8Version: '14.6.1', execArgv: ['--memory-pool-timeout=8'] })?.flags,
    ).toEqual(['--max-semi-space-size=2', '--heap-growing-percent=10']);
  });

  it('runs on as it is under a profiler started with the process (its SIGPROF timer outlives execve)', () => {
    expect(reexecPlan({ ...base, execArgv: ['--cpu-prof', '--cpu-prof-dir=/tmp/p'] })).toBeNull();
    expect(reexecPlan({ ...base, execArgv: ['--prof'] })).toBeNull();
    expect(reexecPlan({ ...base, env: { NODE_OPTIONS: '--heap-prof' } })).toBeNull();
    expect(reexecPlan({ ...base, execArgv: ['--cpu-prof-dir=/tmp/p'] })).not.toBeNull();
  });

  it("keeps the operator's allocator setting, and re-executes for the allocator alone", () => {
    const own = reexecPlan({ ...base, env: { MALLOC_ARENA_MAX: '4' } });
    expect(own?.env['MALLOC_ARENA_MAX']).toBe('4');
    expect(own?.allocator).toEqual([]);
    const flagGiven = reexecPlan({ ...base, execArgv: ['--max-semi-space-size=4'] });
    expect(flagGiven?.flags).toEqual(['--heap-growing-percent=10']);
    expect(flagGiven?.env['MALLOC_ARENA_MAX']).toBe('2');
    expect(flagGiven?.args).toEqual([
      '/usr/bin/node',
      '--heap-growing-percent=10',
      '--max-semi-space-size=4',
      '/app/dist/cli.js',
      'run',
      '--config',
      '/etc/sw.yaml',
    ]);
  });

  it('runs on as it is: no execve, already re-executed, nothing to set', () => {
    expect(reexecPlan({ ...base, canExecve: false })).toBeNull();
    expect(reexecPlan({ ...base, env: { [REEXEC_MARKER_ENV]: '1' } })).toBeNull();
    const growing = ['--heap-growing-percent=10'];
    expect(
      reexecPlan({ ...base, mainRoles: [], execArgv: growing, env: { MALLOC_ARENA_MAX: '8' } }),
    ).toBeNull();
    expect(reexecPlan({ ...base, mainRoles: [] })?.allocator).toEqual(['MALLOC_ARENA_MAX']);
    expect(reexecPlan({ ...base, mainRoles: [] })?.flags).toEqual(['--heap-growing-percent=10']);
    expect(reexecPlan({ ...base, mainRoles: ['deliver'] })?.flags).toEqual([
      '--max-semi-space-size=8',
      '--heap-growing-percent=10',
    ]);
  });

  it('leaves a flag to the operator who gave it (command line or NODE_OPTIONS, - or _)', () => {
    const arenas = { MALLOC_ARENA_MAX: '2' };
    const both = (semi: string): string[] => [semi, '--heap-growing-percent=20'];
    expect(
      reexecPlan({ ...base, env: arenas, execArgv: both('--max-semi-space-size=8') }),
    ).toBeNull();
    expect(
      reexecPlan({ ...base, env: arenas, execArgv: both('--max_semi_space_size=8') }),
    ).toBeNull();
    expect(
      reexecPlan({
        ...base,
        env: { ...arenas, NODE_OPTIONS: '--inspect --max-semi-space-size=16' },
        execArgv: ['--heap_growing_percent=5'],
      }),
    ).toBeNull();
    // The growing factor alone is reason enough: the first collection runs as the program loads.
    const semiOnly = reexecPlan({ ...base, env: arenas, execArgv: ['--max-semi-space-size=8'] });
    expect(semiOnly?.flags).toEqual(['--heap-growing-percent=10']);
    expect(semiOnly?.args.slice(0, 3)).toEqual([
      '/usr/bin/node',
      '--heap-growing-percent=10',
      '--max-semi-space-size=8',
    ]);
  });
});

describe('heapReport', () => {
  it('says what the re-executed process runs with', () => {
    const args = reexecPlan(base)?.args ?? [];
    const env = reexecPlan(base)?.env ?? {};
    // The re-executed process: its execArgv are the flags before the script.
    const execArgv = args.slice(1, args.indexOf('/app/dist/cli.js'));
    expect(heapReport({ ...base, execArgv, env })).toEqual({
      reexecuted: true,
      semiSpace: '--max-semi-space-size=2',
      mallocArenaMax: '2',
      without: null,
    });
  });

  it('names why the main thread runs without its young generation', () => {
    expect(heapReport({ ...base, canExecve: false })).toEqual({
      reexecuted: false,
      semiSpace: null,
      mallocArenaMax: null,
      without: 'no_execve',
    });
    expect(heapReport({ ...base, execArgv: ['--cpu-prof'] }).without).toBe('profiler');
    expect(heapReport({ ...base, env: { NODE_OPTIONS: '--cpu_prof' } }).without).toBe('profiler');
    expect(heapReport({ ...base, env: { [REEXEC_MARKER_ENV]: '1' } })).toEqual({
      reexecuted: false,
      semiSpace: null,
      mallocArenaMax: null,
      without: 'marker',
    });
  });

  it("takes the operator's own flag, from the command line or NODE_OPTIONS, as given", () => {
    expect(
      heapReport({ ...base, canExecve: false, execArgv: ['--max_semi_space_size=4'] }),
    ).toEqual({
      reexecuted: false,
      semiSpace: '--max_semi_space_size=4',
      mallocArenaMax: null,
      without: null,
    });
    expect(
      heapReport({
        ...base,
        canExecve: false,
        env: { NODE_OPTIONS: '--max-semi-space-size=16', MALLOC_ARENA_MAX: '4' },
      }),
    ).toEqual({
      reexecuted: false,
      semiSpace: '--max-semi-space-size=16',
      mallocArenaMax: '4',
      without: null,
    });
  });

  it('names the flag Node.js runs with when the command line and NODE_OPTIONS both set it', () => {
    // NODE_OPTIONS is applied first; the command line's flag wins.
    expect(
      heapReport({
        ...base,
        canExecve: false,
        execArgv: ['--max-semi-space-size=4'],
        env: { NODE_OPTIONS: '--max-semi-space-size=16' },
      }).semiSpace,
    ).toBe('--max-semi-space-size=4');
  });

  it('wants nothing of a main thread that runs no stage', () => {
    expect(heapReport({ ...base, mainRoles: [], canExecve: false }).without).toBeNull();
  });
});
