export {
  ED25519_PUBLIC_KEY_LENGTH,
  ED25519_SIGNATURE_LENGTH,
  MLDSA65_PUBLIC_KEY_LENGTH,
  MLDSA65_SIGNATURE_LENGTH,
  isAcceptableEd25519Key,
  isAcceptableMlDsa65Key,
  verifyEd25519,
  verifyMlDsa65,
} from './signatures.js';
