const DAY_MS = 86_400_000;
const ZERO = 48;
const DASH = 45;
const COLON = 58;
const DOT = 46;
const T = 84;
const Z = 90;

/**
 * RFC 3339 UTC with milliseconds (the wire form of every timestamp): the same string as
 * `Date#toISOString`, built from integer arithmetic because answers format timestamps on the hot
 * path and `toISOString` goes through a Date object and the C library's formatter each time. The
 * civil date comes from the day count with Howard Hinnant's `civil_from_days`. The 24 characters
 * are written in one call rather than joined from pieces: every join of pieces is a string of its
 * own, and a sync page formats a thousand timestamps, whose pieces the collector then has to clear.
 */
export function isoTimestamp(ms: number): string {
  if (!Number.isInteger(ms) || ms < -62_167_219_200_000 || ms > 253_402_300_799_999) return new Date(ms).toISOString(); // outside years 0000-9999
  const days = Math.floor(ms / DAY_MS);
  let rest = ms - days * DAY_MS;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1_460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1_000);
  const milli = rest - second * 1_000;
  return String.fromCharCode(
    ZERO + Math.floor(year / 1000),
    ZERO + (Math.floor(year / 100) % 10),
    ZERO + (Math.floor(year / 10) % 10),
    ZERO + (year % 10),
    DASH,
    ZERO + Math.floor(month / 10),
    ZERO + (month % 10),
    DASH,
    ZERO + Math.floor(day / 10),
    ZERO + (day % 10),
    T,
    ZERO + Math.floor(hour / 10),
    ZERO + (hour % 10),
    COLON,
    ZERO + Math.floor(minute / 10),
    ZERO + (minute % 10),
    COLON,
    ZERO + Math.floor(second / 10),
    ZERO + (second % 10),
    DOT,
    ZERO + Math.floor(milli / 100),
    ZERO + (Math.floor(milli / 10) % 10),
    ZERO + (milli % 10),
    Z,
  );
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

/** True when year-month-day names a day of the proleptic Gregorian calendar (no rolling over). */
export function isCalendarDate(year: number, month: number, day: number): boolean {
  if (
    !Number.isInteger(year) ||
    !Number.isInteger(month) ||
    !Number.isInteger(day) ||
    month < 1 ||
    month > 12 ||
    day < 1
  )
    return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!);
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|([+-])(\d{2}):(\d{2}))$/i;

/**
 * An RFC 3339 instant with a zone (Z or an offset) as ms since the epoch, or null. Every field must
 * be in range as written: `Date.parse` rolls 2027-02-30 into March and 24:00 into the next day, so
 * an operator's typo would silently become another instant. Leap seconds (:60) are refused too.
 */
export function parseRfc3339Instant(text: string): number | null {
  const m = RFC3339.exec(text);
  if (m === null) return null;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (!isCalendarDate(year, month, day) || hour > 23 || minute > 59 || second > 59) return null;
  let offsetMin = 0;
  if (m[8]!.toUpperCase() !== 'Z') {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  const at = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  at.setUTCFullYear(year, month - 1, day);
  at.setUTCHours(hour, minute, second, fraction);
  return at.getTime() - offsetMin * 60_000;
}
