// The shape of a generated validator (schemas/generated/): ajv's standalone code, without the
// schema and compile state a ValidateFunction carries.
import type { ErrorObject } from 'ajv';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';

export interface StandaloneValidator {
  (data: unknown, dataCxt?: DataValidationCxt): boolean;
  errors?: ErrorObject[] | null;
}

/** A generated validator that narrows what it accepts to `T`. */
export type Validator<T> = ((data: unknown, dataCxt?: DataValidationCxt) => data is T) & { errors?: ErrorObject[] | null };
