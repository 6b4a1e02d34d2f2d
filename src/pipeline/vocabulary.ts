/**
 * Vocabulary drift made visible: every word the upstream uses in an enumerated-looking field is
 * recorded once in Redis (shared by replicas, first sight logged once across them when it is a
 * word statuswatch does not recognise), unrecognised words are counted in
 * `statuswatch_upstream_unknown_values_total{field,value}`, and `GET /admin/upstream/vocabulary`
 * lists what was seen and how each word is read. What a word *does* lives in
 * src/upstream/vocabulary.ts; this module only observes.
 */
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { z } from 'zod';
import { toError } from '../errors.js';
import type { Keys, RedisClient } from '../redis.js';
import { countCorrupt, decode, encode, zodShape } from '../redis/stored.js';
import {
  VOCABULARY,
  VOCABULARY_FIELDS,
  isRecognised,
  type FieldVocabulary,
  type VocabularyField,
  type WordCounts,
} from '../upstream/vocabulary.js';

/** Distinct words kept (and used as metric labels) per field; more are counted as `other`. */
export const MAX_WORDS_PER_FIELD = 20;
/** Longest word kept as is; longer ones are cut (they are upstream data, not ours). */
export const MAX_WORD_LENGTH = 64;
export const OTHER = 'other';

export interface SeenWord {
  value: string;
  promised: boolean;
  recognised: boolean;
  meaning: string;
  /** ISO time of the first sight by any replica. */
  firstSeen: string | null;
  /** Occurrences counted by this replica since it started. */
  countHere: number;
}

export interface FieldReport {
  field: VocabularyField;
  where: string;
  promised: readonly string[];
  seen: SeenWord[];
  /** More distinct words were seen than are kept. */
  truncated: boolean;
}

export interface VocabularyRecorderOptions {
  redis: RedisClient;
  keys: Keys;
  log: Logger;
  unknownValues?: Counter<'field' | 'value'>;
  now?: () => number;
}

const SEP = '\u0000';

/** A recorded word's value in the `vocabulary` hash (versioned JSON). */
export const STORED_WORD = zodShape<{ firstSeen: string }>(
  'vocabulary',
  z.object({ firstSeen: z.string() }),
);

export class VocabularyRecorder {
  private readonly key: string;
  private readonly now: () => number;
  /** Words this process has recorded, per field (bounded by MAX_WORDS_PER_FIELD). */
  private readonly kept = new Map<VocabularyField, Map<string, number>>();
  private readonly overflowLogged = new Set<VocabularyField>();

  constructor(private readonly options: VocabularyRecorderOptions) {
    this.key = options.keys.key('vocabulary');
    this.now = options.now ?? Date.now;
  }

  /** Counts one response's words; first sights are written to Redis in the background. */
  record(words: WordCounts | undefined): void {
    if (words === undefined) return;
    for (const { field, word: raw, count } of words.entries()) {
      const word = raw.length > MAX_WORD_LENGTH ? raw.slice(0, MAX_WORD_LENGTH) : raw;
      let kept = this.kept.get(field);
      if (kept === undefined) {
        kept = new Map();
        this.kept.set(field, kept);
      }
      const recognised = isRecognised(field, word);
      const have = kept.get(word);
      let label = word;
      if (have !== undefined) {
        kept.set(word, have + count);
      } else if (kept.size < MAX_WORDS_PER_FIELD) {
        kept.set(word, count);
        this.firstSight(field, word, recognised);
      } else {
        label = OTHER;
        if (!this.overflowLogged.has(field)) {
          this.overflowLogged.add(field);
          this.options.log.warn(
            { event: 'upstream:vocabulary_overflow', field, max: MAX_WORDS_PER_FIELD },
            `more than ${String(MAX_WORDS_PER_FIELD)} distinct upstream values in ${field}: the rest count as "${OTHER}"`,
          );
        }
      }
      if (!recognised) this.options.unknownValues?.inc({ field, value: label }, count);
    }
  }

  private firstSight(field: VocabularyField, word: string, recognised: boolean): void {
    const entry = encode(STORED_WORD, { firstSeen: new Date(this.now()).toISOString() });
    this.options.redis
      .hsetnx(this.key, `${field}${SEP}${word}`, entry)
      .then((created) => {
        if (created !== 1 || recognised) return;
        const v: FieldVocabulary = VOCABULARY[field];
        this.options.log.warn(
          { event: 'upstream:unknown_value', field, value: word, meaning: v.meaning(word) },
          `new upstream value ${JSON.stringify(word)} in ${field}: ${v.meaning(word)}`,
        );
      })
      .catch((err: unknown) => {
        // Not recorded this time: forget it so a later response tries again.
        this.kept.get(field)?.delete(word);
        this.options.log.warn(
          { event: 'upstream:vocabulary_failed', err: toError(err).message },
          'could not record an upstream value',
        );
      });
  }

  /** Every field, its promised words and the words seen (by any replica), most frequent here first. */
  async report(): Promise<FieldReport[]> {
    const stored = await this.options.redis.hgetall(this.key);
    const byField = new Map<VocabularyField, Map<string, string | null>>();
    for (const [k, v] of Object.entries(stored)) {
      const i = k.indexOf(SEP);
      const field = k.slice(0, i) as VocabularyField;
      if (i < 0 || !Object.hasOwn(VOCABULARY, field)) continue;
      // An unreadable entry still names the word.
      const stored = decode(STORED_WORD, v);
      if (stored === undefined) countCorrupt(STORED_WORD.kind);
      const firstSeen = stored?.firstSeen ?? null;
      let words = byField.get(field);
      if (words === undefined) {
        words = new Map<string, string | null>();
        byField.set(field, words);
      }
      words.set(k.slice(i + 1), firstSeen);
    }
    return VOCABULARY_FIELDS.map((field) => {
      const v: FieldVocabulary = VOCABULARY[field];
      const here = this.kept.get(field) ?? new Map<string, number>();
      const words = new Map<string, string | null>(byField.get(field) ?? []);
      for (const w of here.keys()) if (!words.has(w)) words.set(w, null);
      const seen = [...words].map(([value, firstSeen]) => ({
        value,
        promised: v.promised.includes(value.trim().toLowerCase()),
        recognised: isRecognised(field, value),
        meaning: v.meaning(value),
        firstSeen,
        countHere: here.get(value) ?? 0,
      }));
      seen.sort((a, b) => b.countHere - a.countHere || (a.value < b.value ? -1 : 1));
      return {
        field,
        where: v.where,
        promised: v.promised,
        seen,
        truncated: this.overflowLogged.has(field),
      };
    });
  }
}
