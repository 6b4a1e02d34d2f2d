import { StatuswatchError } from '../errors.js';

export type BenchErrorCode =
  'bench_usage' | 'bench_timeout' | 'bench_child' | 'bench_measurement' | 'bench_redis_info';

/** Why a benchmark measurement could not be made (a missed target is not an error). */
export class BenchError extends StatuswatchError {
  declare readonly code: BenchErrorCode;

  constructor(code: BenchErrorCode, message: string, cause?: unknown) {
    super(code, message, { cause });
  }
}
