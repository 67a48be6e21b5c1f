/** The only source of randomness in core. Must be cryptographically secure in production. */
export interface Random {
  bytes(length: number): Uint8Array;
}
