import { StatuswatchError } from '../errors.js';

/** Error codes thrown by the simulator's control API and scenario loader. */
export type SimulatorErrorCode =
  | 'sim_invalid_option'
  | 'sim_unknown_feed'
  | 'sim_unknown_incident'
  | 'sim_duplicate_incident'
  | 'sim_invalid_argument'
  | 'sim_not_listening'
  | 'sim_scenario_read'
  | 'sim_scenario_invalid'
  | 'sim_scenario_step';

export class SimulatorError extends StatuswatchError {
  declare readonly code: SimulatorErrorCode;

  // Not useless: narrows `code` to the simulator's codes.
  // eslint-disable-next-line @typescript-eslint/no-useless-constructor
  constructor(code: SimulatorErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
