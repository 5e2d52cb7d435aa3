package plant

// A holdingController is a controller of this package that decides only
// now and then (MPC, once per control period) and can say what it requests
// until its next decision (hold): the step loop then asks it only when the
// hold runs out, and takes the steps in between as it does under the
// built-in controllers, with the observation in place. Its requests, and
// its plans (none at a held step), are exactly those it would have made.
type holdingController interface {
	ClockController
	// hold is what the controller requests after its last RequestClock,
	// and false if it cannot say.
	hold() (clockHold, bool)
}

// A clockHold is a holdingController's request until its next decision:
// idleMHz at every step with nothing queued or decoding, and busyMHz at
// every other step that starts at or before busyUntilS. It makes no plan
// at those steps.
type clockHold struct {
	idleMHz, busyMHz, busyUntilS float64
}

// holderOf returns c as a holdingController when it is one of this
// package's (nil otherwise: a type that embeds one and overrides
// RequestClock is not), under a built-in scheduler (a held step fills only
// the observation the built-in schedulers read).
func holderOf(c ClockController, s schedulerKind) holdingController {
	if s == schedulerOther {
		return nil
	}
	switch c := c.(type) {
	case *MPC:
		return c
	case ClairvoyantMPC:
		return c
	}
	return nil
}

// heldRequest is the hold the step loop keeps, with the levels its
// requests are quantized down to.
type heldRequest struct {
	clockHold
	valid      bool
	idle, busy *clockLevel
}

// refreshHold asks the holder for its hold after a RequestClock.
func (sim *simulation) refreshHold() {
	h, ok := sim.holding.hold()
	held := &sim.held
	held.valid = ok && finite(h.idleMHz) && finite(h.busyMHz)
	if !held.valid {
		return
	}
	if held.idle == nil || h.idleMHz != held.idleMHz {
		held.idle = sim.quantize(h.idleMHz)
	}
	if held.busy == nil || h.busyMHz != held.busyMHz {
		held.busy = sim.quantize(h.busyMHz)
	}
	held.clockHold = h
}

// holdsBusy reports whether the hold covers the current step, a busy one.
func (sim *simulation) holdsBusy() bool {
	return sim.held.valid && sim.timeS <= sim.held.busyUntilS
}
