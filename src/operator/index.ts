/** The fleet operator role's public entry point: what `gantry operator run` starts, and the field manager it writes as. */
export { OPERATOR_FIELD_MANAGER, startOperator } from './operator.ts';
