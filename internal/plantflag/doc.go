// Package plantflag turns the command-line flags of a plant run into plant
// settings: the plant parameters by flag name (Params, Value), the SLO
// flags, the engine feature flags (Engine), --exec-timeout, --max-steps and
// --max-elapsed, and the wording of the errors that name them. simulate,
// sweep and capacity share it, so a flag means the same in each.
//
// Its checks return plain errors whose messages name the flag ("--stride
// 0: expected ..."); the command marks them as usage errors.
package plantflag
