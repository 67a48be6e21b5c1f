/**
 * Responses that already carry the protocol headers as a plain object. @hono/node-server writes
 * such headers directly; `c.header()` would make Hono build a Fetch \`Headers\` for every response.
 * The app's middleware stamps every other response.
 */
export const stamped = new WeakSet<Response>();
