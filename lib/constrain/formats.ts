/**
 * The string formats constrained output writes, each as a pattern of the regex subset
 * (lib/constrain/regex-parse.ts). Each pattern's strings all pass ajv-formats' check of the format
 * (the full check, not the "fast" one); where the format admits more (RFC 5322's quoted local parts,
 * leap seconds, `urn:uuid:`), the pattern is a documented practical subset of it.
 */

const DAY_31 = '(?:0[1-9]|[12]\\d|3[01])';
const DAY_30 = '(?:0[1-9]|[12]\\d|30)';
const DAY_28 = '(?:0[1-9]|1\\d|2[0-8])';
/** Years divisible by 4 but not by 100, or by 400. */
const LEAP_YEAR = '(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';
/** A full date with the days each month has, 29 February in leap years only. */
const DATE = `(?:\\d{4}-(?:(?:0[13578]|1[02])-${DAY_31}|(?:0[469]|11)-${DAY_30}|02-${DAY_28})|${LEAP_YEAR}-02-29)`;
/** Hours, minutes, seconds and a fraction; a time zone (Z or ±hh:mm). No leap second. */
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:[Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)';
const HEX = '[0-9a-fA-F]';
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
/** A DNS label: letters, digits and inner hyphens, at most 63. */
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';

/** A port, 0-65535 (URL parsers refuse more). */
const PORT = '(?:6553[0-5]|655[0-2]\\d|65[0-4]\\d\\d|6[0-4]\\d{3}|[1-5]\\d{4}|[1-9]\\d{0,3}|0)';
const PCHAR = "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";
const QCHAR = "(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})";

/** Each supported format's pattern (anchored at both ends). */
export const FORMAT_PATTERNS: Readonly<Record<string, string>> = Object.freeze({
  date: `^${DATE}$`,
  time: `^${TIME}$`,
  'date-time': `^${DATE}[Tt]${TIME}$`,
  uuid: `^${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}$`,
  /** A dot-atom local part of letters, digits and . _ % + - (no leading, trailing or double dot), then labels with a letter-only top level. */
  email: `^[A-Za-z0-9_%+-]+(?:\\.[A-Za-z0-9_%+-]+)*@(?:${LABEL}\\.)+[A-Za-z]{2,63}$`,
  ipv4: `^${OCTET}(?:\\.${OCTET}){3}$`,
  /** An http(s) URL (the scheme in lower case): DNS labels, an optional port up to 65535, path segments, a query and a fragment of RFC 3986's characters (percent escapes whole). */
  uri: `^https?://${LABEL}(?:\\.${LABEL})*(?::${PORT})?(?:/${PCHAR}*)*(?:\\?${QCHAR}*)?(?:#${QCHAR}*)?$`,
});
