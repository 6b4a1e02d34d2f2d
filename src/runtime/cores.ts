import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { quotaOfCfs, quotaOfCpuMax, usableCoresOf } from './plan.js';

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** The container's CPU quota in cores (cgroup v2, else v1), or null when none is set or readable. */
export function cgroupCpuQuota(root = '/sys/fs/cgroup'): number | null {
  const v2 = read(`${root}/cpu.max`);
  if (v2 !== null) return quotaOfCpuMax(v2);
  const quota =
    read(`${root}/cpu/cpu.cfs_quota_us`) ?? read(`${root}/cpu,cpuacct/cpu.cfs_quota_us`);
  const period =
    read(`${root}/cpu/cpu.cfs_period_us`) ?? read(`${root}/cpu,cpuacct/cpu.cfs_period_us`);
  return quota === null || period === null ? null : quotaOfCfs(quota, period);
}

/** The cores this process may use: `os.availableParallelism()` bounded by the cgroup quota. */
export function usableCores(): { cores: number; parallelism: number; quota: number | null } {
  const parallelism = availableParallelism();
  const quota = cgroupCpuQuota();
  return { cores: usableCoresOf(parallelism, quota), parallelism, quota };
}
