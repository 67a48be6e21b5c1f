/** One Ed25519 key as a key ring stores it: the 32-byte seed and public key, base64url. */
export interface Ed25519Key {
  readonly kid: string;
  readonly seed: string;
  readonly publicKey: string;
}

/**
 * Ed25519 signatures. Ed25519 is deterministic, so every implementation gives the same bytes for
 * the same key and message; they differ only in cost. Core's own (`webCryptoSigner`) runs wherever
 * WebCrypto does. On Node that is an asynchronous job on libuv's thread pool, and the hand-off
 * costs more than the signature: the Node platform brings a synchronous one (adapters-node).
 */
export interface Ed25519Signer {
  sign(key: Ed25519Key, message: Uint8Array): Uint8Array | Promise<Uint8Array>;
}
