// TypeScript shapes of the JSON Schemas in this folder. The schemas are the contract;
// these types only describe what a value has once its validator accepted it.
import type { Aggregate } from './aggregate.js';

export const CONTROL_TYPES = ['Button', 'Slider', 'Toggle', 'Index', 'String', 'XYPad'] as const;
export type ControlType = (typeof CONTROL_TYPES)[number];

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
  /** crowd aggregation (aggregate.ts) */
  aggregate?: Aggregate;
}

export interface Page {
  pageId: string;
  name: string;
  controls: Control[];
}

/** What `audiencectl layout import` reads (layout-definition.schema.json). */
export interface LayoutDefinition {
  layoutId: string;
  name: string;
  activePageId: string;
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
