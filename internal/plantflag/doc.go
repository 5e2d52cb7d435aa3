// Package plantflag binds the parameter table of a plant run
// (runparams) to cobra flags: the plant parameters by flag name (AddPlant,
// Value, AddPlantAxes), the SLO flags, the engine feature and service model
// flags, --exec-timeout, --max-steps and --max-elapsed, and --controller's
// completion. simulate, sweep, capacity and bench share it, so a flag
// means the same in each; a flag is named as its setting (runparams), with
// dashes.
package plantflag
