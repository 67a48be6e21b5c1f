import { webCryptoSigner } from '@strongroom/core';
import { describeSignerContract } from './signer.js';

// Core's own signer, as the in-memory store's contracts run here too (core cannot depend on this package).
describeSignerContract('WebCrypto (core)', webCryptoSigner);
