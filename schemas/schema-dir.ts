// Where the *.schema.json files are: beside this module (the build copies them next to it).
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SCHEMA_DIR = dirname(fileURLToPath(import.meta.url));
