/** A peer could not be reached in time, or answered something that is not its record. */
export class PeerUnavailableError extends Error {
  override readonly name = 'PeerUnavailableError';
}
