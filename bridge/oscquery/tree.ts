// The namespace as OSCQuery's JSON tree: a container per address part (FULL_PATH, CONTENTS,
// ACCESS 0), a method per address (FULL_PATH, TYPE, RANGE, DESCRIPTION, ACCESS 1: the bridge
// only sends, so a value can be read and listened to, never set) and the last value the bridge
// played there (VALUE). An address that is also another's prefix (/002 and /002/n) is both.
import { argValue, type OscArg } from '../osc.js';
import type { Method } from './namespace.js';

export interface OscNode {
  FULL_PATH: string;
  DESCRIPTION?: string;
  ACCESS: 0 | 1;
  TYPE?: string;
  RANGE?: unknown[];
  VALUE?: unknown[];
  CONTENTS?: Record<string, OscNode>;
}

/** The attributes a node may be asked for one at a time (`/path?RANGE`). */
export const ATTRIBUTES = new Set(['FULL_PATH', 'CONTENTS', 'DESCRIPTION', 'ACCESS', 'TYPE', 'RANGE', 'VALUE']);


export class Tree {
  readonly root: OscNode;
  private readonly nodes = new Map<string, OscNode>();

  constructor(methods: Iterable<Method>, description: string) {
    this.root = { FULL_PATH: '/', DESCRIPTION: description, ACCESS: 0 };
    this.nodes.set('/', this.root);
    for (const m of methods) {
      const node = this.node(m.address);
      node.ACCESS = 1;
      node.DESCRIPTION = m.description;
      if (m.type !== '') {
        node.TYPE = m.type;
        if (m.range.some((r) => r !== null)) node.RANGE = m.range;
      }
    }
  }

  /** The node at an OSC address, made with its containers if it is not there yet. */
  private node(address: string): OscNode {
    const had = this.nodes.get(address);
    if (had) return had;
    const cut = address.lastIndexOf('/');
    const parent = this.node(cut === 0 ? '/' : address.slice(0, cut));
    const node: OscNode = { FULL_PATH: address, ACCESS: 0 };
    (parent.CONTENTS ??= {})[address.slice(cut + 1)] = node;
    this.nodes.set(address, node);
    return node;
  }

  /** The node at a path, or undefined. A trailing slash names the same node. */
  find(path: string): OscNode | undefined {
    return this.nodes.get(path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
  }

  /** The method's last value played (a method only). */
  setValue(address: string, args: readonly OscArg[]): void {
    const node = this.nodes.get(address);
    if (node && node.ACCESS === 1) node.VALUE = args.map(argValue);
  }

  /** The tree's shape without values: compared to tell whether a new namespace changed anything. */
  shape(): string {
    return JSON.stringify(this.root, (k, v: unknown) => (k === 'VALUE' ? undefined : v));
  }
}
