// Package runparams is the parameter table of a plant run, without a
// command line: the plant parameters by name (Params), the engine features
// (Engine), the service model and its cards (Service), the SLOs, the work
// checks (CheckWork, CheckFleetWork, CheckLiveKVBlocks) and the controller
// options (ControllerOptions). simrun, sweeprun and capacity run from
// it; plantflag binds it to cobra flags.
//
// A setting is named as the flag that sets it, without dashes ("stride",
// "max-sim-time"; a sweep's axes are named so too). Its checks report a
// bad setting by name, as a *FieldError whose message names settings bare
// ("stride 0: expected a positive whole number"); the command maps the
// names to its flags (Named: "--stride 0: ...").
package runparams
