export {
  normalizeDisplayName,
  checkPassword,
  couldBePassword,
  normalizeAddress,
  addressKeyOf,
  holdsInvisible,
  findAccountByAddress,
  DISPLAY_NAME_MAX,
  PASSWORD_MIN,
  PASSWORD_MAX,
  ADDRESS_MAX,
} from './rules.js';
export type { NormalizedAddress } from './rules.js';
