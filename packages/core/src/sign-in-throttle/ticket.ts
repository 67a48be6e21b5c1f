import { fromBase64url, sha256Hex, toBase64url } from '../encoding/bytes.js';
import type { Random } from '../ports/random.js';

/** A sign-in ticket's size: at least 16 random bytes (spec §3.10); 24 tells it apart from a session token. */
export const TICKET_BYTES = 24;

/** A fresh sign-in ticket and the hash that is all the store ever sees. */
export function newSignInTicket(random: Random): { ticket: string; ticketHash: string } {
  const bytes = random.bytes(TICKET_BYTES);
  return { ticket: toBase64url(bytes), ticketHash: sha256Hex(bytes) };
}

/** The store key of a presented ticket; null when it cannot be one of ours (then it counts as absent). */
export function signInTicketHash(ticket: string): string | null {
  const bytes = fromBase64url(ticket);
  return bytes !== null && bytes.length === TICKET_BYTES ? sha256Hex(bytes) : null;
}
