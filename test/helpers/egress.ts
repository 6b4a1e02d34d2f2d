/**
 * Test receivers listen on loopback, which the egress policy refuses to channels stored through
 * the API by default: the daemons under test allow it, as an operator allows an internal relay.
 * (test/egress.test.ts runs with the default policy.)
 */
export const LOOPBACK_RECEIVERS = { allow: ['127.0.0.0/8', '::1'] };
