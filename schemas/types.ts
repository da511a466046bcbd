// TypeScript shapes of the JSON Schemas in this folder. The schemas are the contract;
// these types only describe what a value has once its validator accepted it.
import type { LightCanvasDefinition } from './light.js';

export const CONTROL_TYPES = ['Button', 'Slider', 'Toggle', 'Index', 'String', 'XYPad'] as const;
export type ControlType = (typeof CONTROL_TYPES)[number];

export const AGGREGATE_MODES = ['mean', 'median', 'trimmed-mean', 'fraction', 'votes', 'centroid', 'rate'] as const;
export type AggregateMode = (typeof AGGREGATE_MODES)[number];

/** `aggregate.cue` of a control: a crowd decision the bridge sends (crowd-cue.ts). */
export interface CueSettings {
  quorum?: number;
  holdMs?: number;
  /** votes: the winning option's share of the votes, at least */
  share?: number;
  /** thresholds: 1 at or above this */
  above?: number;
  /** thresholds: 0 at or below this (less than above) */
  below?: number;
}

/** `moderation` of a String control: what the crowd may write (gateway/moderation/text-policy.ts). */
export interface Moderation {
  mode: 'open' | 'filter' | 'hold';
  /** code points at most, after control characters are removed */
  maxLength?: number;
  /** the layout's own words, refused as `blocklist` */
  blocklist?: string[];
  /** words the word lists refuse that this layout allows */
  allow?: string[];
  /** links, email addresses, phone numbers */
  block?: ('urls' | 'emails' | 'phones')[];
  /** the word lists' languages (default ['en']) */
  languages?: string[];
}

/** `aggregate` of a control: crowd aggregation (aggregate.ts has the modes each type takes). */
export interface Aggregate {
  mode: AggregateMode;
  /** how long a participant's latest value counts (default 1,000 ms) */
  windowMs?: number;
  /** a crowd decision sent as `<address>/cue` (crowd-cue.ts) */
  cue?: CueSettings;
}

export interface ControlOption {
  index: number;
  label: string;
}

/** A control as in spec 2.2 (control.schema.json). */
export interface Control {
  lid: number;
  address: string;
  type: ControlType;
  props: { label: string; [prop: string]: unknown };
  options?: ControlOption[];
  aggregate?: Aggregate;
  /** String controls only */
  moderation?: Moderation;
}

export interface Page {
  pageId: string;
  name: string;
  controls: Control[];
}

/** A layout's own per-participant rates (`limits` of layout-definition.schema.json), over the gateway's defaults. */
export interface LayoutLimits {
  actionsPerSecond?: number;
  actionBurst?: number;
  stringsPerSecond?: number;
  stringBurst?: number;
}

/** What `audiencectl layout import` reads (layout-definition.schema.json). */
export interface LayoutDefinition {
  layoutId: string;
  name: string;
  activePageId: string;
  /** parts of the room a participant may be placed in (POST /token `zone`) */
  zones?: string[];
  /** the light canvas: its phones as pixels the show lights (schemas/light.ts) */
  light?: LightCanvasDefinition;
  limits?: LayoutLimits;
  pages: Page[];
}

/** The value of an action, by control type (action-value.schema.json). */
export type ActionValue = null | number | boolean | string | [number, number];

/** POST /action body (action-request.schema.json). */
export interface ActionRequest {
  layoutId: string;
  lid: number;
  type: ControlType;
  value?: unknown;
}

/** POST /token body (token-request.schema.json). */
export interface TokenRequest {
  layoutId: string;
  zone?: string;
  /** where in its zone the participant sits (0 to 1 each way), for light patterns */
  seat?: { x: number; y: number };
  /** an earlier token of the participant to renew */
  renew?: string;
}

/** One accepted action in a layout's stream (action-entry.schema.json). */
export interface ActionEntry {
  v: 1;
  id: string;
  layoutId: string;
  lid: number;
  address: string;
  type: ControlType;
  value: ActionValue;
  /** Gateway receive time, ms since the epoch. */
  ts: number;
}
