/** The only source of time in core. Milliseconds since the Unix epoch. */
export interface Clock {
  now(): number;
}
