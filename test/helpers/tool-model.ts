/**
 * The tiny Qwen3 fixture model with the real Qwen3 tokenizer_config.json beside its tokenizer (so
 * its chat template is Qwen3's own, tools and all), in a temp folder, its header's max_seq_len
 * (ajc1 offset 0x20, FORMATS.md §5) raised from 256 to CONTEXT so that a prompt with tool
 * definitions and a round of results fits (its RoPE is computed per position: nothing else changes);
 * and tool definitions whose schemas exercise the mask (enum, integers, strings, nested objects, arrays).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture, tempDir } from './fixtures';

export const CONTEXT = 1024;

export const QWEN3_TEMPLATE_SOURCE: string = JSON.parse(fs.readFileSync(fixture('tokenizers', 'qwen3', 'tokenizer_config.json'), 'utf8')).chat_template;

/** Loads the model (`template` null: no chat_template, so the built-in Qwen3 one); `cleanup` disposes it and removes the folder. */
export async function loadToolModel(template: string | null = QWEN3_TEMPLATE_SOURCE): Promise<{ model: Model; cleanup: () => void }> {
  const tmp = tempDir('weightmap-tools-');
  for (const file of ['vocab.json', 'merges.txt']) fs.copyFileSync(fixture('tokenizers', 'qwen3', file), path.join(tmp.dir, file));
  const config = JSON.parse(fs.readFileSync(fixture('tokenizers', 'qwen3', 'tokenizer_config.json'), 'utf8'));
  const { chat_template: _own, ...rest } = config;
  fs.writeFileSync(path.join(tmp.dir, 'tokenizer_config.json'), JSON.stringify(template === null ? rest : { ...rest, chat_template: template }));
  const weights = Buffer.from(fs.readFileSync(fixture('ajc1-qwen3-tiny', 'model.bin')));
  if (weights.readInt32LE(0x20) !== 256) throw new Error('the ajc1-qwen3-tiny header is not the one this helper knows');
  weights.writeInt32LE(CONTEXT, 0x20);
  const file = path.join(tmp.dir, 'model.bin');
  fs.writeFileSync(file, weights);
  const model = await loadModel(file, { threads: 1, tokenizer: tmp.dir });
  return {
    model,
    cleanup: () => {
      model.dispose();
      tmp.cleanup();
    },
  };
}

export const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string' },
      unit: { enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer' },
    },
    required: ['city', 'unit', 'days'],
  },
};

export const BOOKING_TOOL = {
  name: 'book_table',
  parameters: {
    type: 'object',
    properties: {
      guests: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, vip: { type: 'boolean' } }, required: ['name', 'vip'] }, minItems: 1, maxItems: 2 },
      when: { type: 'string' },
    },
    required: ['guests', 'when'],
  },
};

export const TOOLS = [WEATHER_TOOL, BOOKING_TOOL];

/** Tools whose arguments are bounded (enums, booleans, short arrays, nested objects): every forced call must close. */
export const ALARM_TOOL = {
  name: 'set_alarm',
  parameters: {
    type: 'object',
    properties: {
      hour: { enum: Array.from({ length: 24 }, (_, i) => i) },
      days: { type: 'array', items: { enum: ['mon', 'tue', 'wed', 'thu', 'fri'] }, minItems: 1, maxItems: 3 },
      loud: { type: 'boolean' },
    },
    required: ['hour', 'days', 'loud'],
  },
};

export const COLOR_TOOL = {
  name: 'pick_color',
  parameters: {
    type: 'object',
    properties: { color: { enum: ['red', 'green', 'blue'] }, shade: { type: 'object', properties: { dark: { type: 'boolean' } }, required: ['dark'] } },
    required: ['color', 'shade'],
  },
};

export const BOUNDED_TOOLS = [ALARM_TOOL, COLOR_TOOL];
